import { withPublic, declareMethods } from '@/lib/api/route';
import { buildOpenApiDocument } from '@/lib/api/openapi/document';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = declareMethods({
  // GET /v1/openapi.json (also /openapi.json) – the OpenAPI 3.1 document, bare (not wrapped in data), no auth
  GET: withPublic({}, async () =>
    Response.json(buildOpenApiDocument(), { headers: { 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' } }),
  ),
});
