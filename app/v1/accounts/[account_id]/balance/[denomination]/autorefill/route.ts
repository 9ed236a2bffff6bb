// The `autorefill` spelling of .../auto_refill.
export { PUT, DELETE } from '../auto_refill/route';
