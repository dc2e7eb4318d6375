# One image for every part: the API (default), the worker and the migration one-shot differ only
# by command (see docker-compose.yml).

# --- build: compile TypeScript to dist/ -------------------------------------------------------
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# note: the client package (a workspace) before npm ci: its prepare script builds
# packages/client/dist, which the partner CLI's sources import.
COPY packages/client ./packages/client
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
RUN npm run build

# --- runtime: production dependencies and the compiled code only -------------------------------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
# note: a 4 MB young generation (V8's default is 16 MB) kept the API's peak RSS under 250 MB at
# 32 concurrent 2 MB imports in `npm run bench` (292 -> 247 MB) for about 5% of throughput.
ENV NODE_OPTIONS=--max-semi-space-size=4
WORKDIR /app
COPY package.json package-lock.json ./
# note: the client package arrives built from the build stage (the CLI in dist/cli imports it);
# --ignore-scripts because its prepare script compiles it, and there is no compiler here.
COPY --from=build /app/packages/client/package.json ./packages/client/package.json
COPY --from=build /app/packages/client/dist ./packages/client/dist
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
# note: dist/ must sit beside package.json, migrations/ and CHANGELOG.md: service-version.ts
# reads ../../../package.json, migrate.ts ../../../migrations/ and the OpenAPI document
# ../../../CHANGELOG.md, relative to the compiled module.
COPY migrations ./migrations
COPY CHANGELOG.md ./
COPY --from=build /app/dist ./dist
# note: files stay owned by root, so the process cannot rewrite its own code.
USER node
EXPOSE 3000
# note: slim images have no curl; node's fetch does the probe. Only meaningful for the API, so
# docker-compose.yml disables it for the worker and the migration.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/v1/health', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/api/main.js"]
