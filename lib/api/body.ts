import { ApiError } from '../errors';

/** Bodies of calls made with credentials (company API, operator). */
export const MAX_BODY = 1024 * 1024;
/** Bodies anyone may send (sign-in, the card collector): a stranger cannot make the server hold much. */
export const PUBLIC_MAX_BODY = 64 * 1024;

function tooLarge(limit: number): ApiError {
  const size = limit >= 1024 * 1024 ? `${limit / (1024 * 1024)} MiB` : `${limit / 1024} KiB`;
  return new ApiError('payload_too_large', `Request bodies are limited to ${size}.`);
}

/**
 * The request body, at most `limit` bytes. A larger declared Content-Length is refused before a
 * byte is read; a body sent without one (chunked) is refused as soon as it passes the limit, so
 * no more than `limit` bytes are ever held.
 */
export async function readBoundedBody(req: Request, limit: number): Promise<Buffer> {
  const declared = Number(req.headers.get('content-length') ?? 0);
  if (declared > limit) throw tooLarge(limit);
  if (!req.body) return Buffer.alloc(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
