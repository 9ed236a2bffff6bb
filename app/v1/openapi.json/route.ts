import { withPublic, methodsNotAllowed } from '@/lib/api/route';
import { buildOpenApiDocument } from '@/lib/api/openapi/document';

// GET /v1/openapi.json (also /openapi.json) – the OpenAPI 3.1 document, bare (not wrapped in data), no auth
export const GET = withPublic({}, async () =>
  Response.json(buildOpenApiDocument(), { headers: { 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' } }),
);
export const { POST, PUT, PATCH, DELETE } = methodsNotAllowed('GET');
