export { TOPICS, type Topic } from '../../db/schema/enums';
