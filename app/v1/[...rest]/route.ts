import { ApiError } from '@/lib/errors';
import { errorResponse, newRequestId } from '@/lib/api/route';

// Any other /v1 path: a JSON 404 in the error shape rather than an HTML page.
async function notFound(): Promise<Response> {
  return errorResponse(new ApiError('not_found', 'No such route. See /v1/openapi.json for every endpoint.'), newRequestId());
}
export { notFound as GET, notFound as POST, notFound as PUT, notFound as PATCH, notFound as DELETE, notFound as OPTIONS };
