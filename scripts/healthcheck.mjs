// The image's HEALTHCHECK: exits 0 when this container's process answers GET /readyz with 200
// (the database answers and the migrations are applied), 1 otherwise. It asks the port given as
// its argument; without one, the worker's probe port when WORKER_HEALTH_PORT is set to one
// (`node dist/worker.mjs`), the server's PORT otherwise.
const given = Number(process.argv[2]);
const port = given > 0 ? given : Number(process.env.WORKER_HEALTH_PORT) || Number(process.env.PORT) || 3000;
fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_500) }).then(
  (res) => process.exit(res.status === 200 ? 0 : 1),
  () => process.exit(1),
);
