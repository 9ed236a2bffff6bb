# syntax=docker/dockerfile:1
# One image for every role: the API and console (default command), the worker
# (`node dist/worker.mjs`), the migration step (`node dist/migrate.mjs`) and company
# registration (`node dist/company-create.mjs`). Node alone runs them: no tsx, no dev packages.
# scripts/image.test.ts starts exactly what the runtime stage copies, with plain node.

FROM node:20-bookworm-slim AS build
WORKDIR /app
ENV NEXT_TELEMETRY_DISABLED=1
COPY package.json package-lock.json ./
# Run by npm ci (postinstall): a repair of the PostgreSQL driver (see the script).
COPY scripts/patch-dependencies.mjs ./scripts/
RUN npm ci --no-audit --no-fund
COPY . .
# next build (standalone server in .next/standalone) and the bundled commands in dist/
RUN npm run build

FROM node:20-bookworm-slim AS runtime
# SHUTDOWN_DELAY_MS: after SIGTERM the server goes on answering new connections for 5 s (readiness
# already 503) while load balancers take it out of rotation, then drains (README, "Stopping and
# rolling out"). 0 turns it off.
WORKDIR /app
ENV NODE_ENV=production \
    NEXT_TELEMETRY_DISABLED=1 \
    HOSTNAME=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data \
    DEMO_COMPANY=0 \
    SHUTDOWN_DELAY_MS=5000
RUN groupadd --system --gid 1001 billing \
 && useradd --system --uid 1001 --gid billing --no-create-home --shell /usr/sbin/nologin billing \
 && mkdir -p /data /app/.next/cache \
 && chown billing:billing /data /app/.next/cache
COPY --from=build /app/.next/standalone ./
COPY --from=build /app/.next/static ./.next/static
COPY --from=build /app/drizzle ./drizzle
COPY --from=build /app/dist ./dist
COPY --from=build /app/scripts/serve.mjs ./scripts/serve.mjs
# The embedded database's thread (lib/db/pglite-thread.ts starts it).
COPY --from=build /app/scripts/pglite-thread.mjs ./scripts/pglite-thread.mjs
COPY --from=build /app/scripts/healthcheck.mjs ./scripts/healthcheck.mjs
USER billing
EXPOSE 3000
# Healthy while GET /readyz answers 200: the server's PORT, or the worker's WORKER_HEALTH_PORT.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["node", "scripts/healthcheck.mjs"]
# node as PID 1 handles SIGTERM itself (scripts/serve.mjs, lib/shutdown.ts).
CMD ["node", "scripts/serve.mjs"]
