// A tiny webhook receiver for trying the service locally: prints every delivery it gets.
// Usage: node scripts/webhook-listen.mjs [port]   (default 4000; answers 200)
import http from 'node:http';

const port = Number(process.argv[2] ?? process.env.PORT ?? 4000);
http
  .createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const user = req.headers.authorization ? Buffer.from(req.headers.authorization.replace(/^Basic /, ''), 'base64').toString().split(':')[0] : '-';
      console.log(`${new Date().toISOString()} ${req.method} ${req.url} id=${req.headers['webhook-id']} basic-user=${user}\n  ${body}`);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`listening for webhooks on http://127.0.0.1:${port}`));
