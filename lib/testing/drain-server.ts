// A plain HTTP server that stops on SIGTERM as the service does (lib/shutdown.ts, drainServer),
// for lib/shutdown.test.ts to count what clients see across a drain. Each request reads its
// body, spends WORK_MS of CPU, then answers after 2 ms; the port goes to the parent by IPC.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { trackConnections } from '../http/connections';
import { drainServer } from '../shutdown';

const work = Number(process.env.WORK_MS ?? 3);
let accepted = 0;
let answered = 0;
let draining = false;
// Answers given after the drain began, and how many of them said Connection: close.
let late = 0;
let lateClose = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const until = performance.now() + work;
    while (performance.now() < until);
    setTimeout(() => {
      if (draining) {
        late++;
        if (res.getHeader('connection') === 'close') lateClose++;
      }
      res.end('ok');
    }, 2);
  });
  res.on('finish', () => answered++);
});
if (process.env.TRACK !== '0') trackConnections(server);
server.on('connection', () => accepted++);
server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
process.on('SIGTERM', async () => {
  draining = true;
  const drained = await drainServer(server, Date.now() + 10_000);
  process.send!({ drained, accepted, answered, late, lateClose });
  process.disconnect();
  process.exit(0);
});
