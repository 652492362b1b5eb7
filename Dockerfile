# syntax=docker/dockerfile:1
# toolgate worker image. Build: `docker build -t toolgate-worker .` (docker-compose.yml builds it too).
#
# Three stages: `build` compiles the TypeScript into dist/ with every dependency; `deps` installs the
# production dependencies alone (Temporal's packages and zod are peer dependencies, which npm
# installs for the root project too); the runtime image gets those and the compiled JS, nothing
# else. No secret is baked in: credentials and the approval public key arrive at run time
# (environment / read-only mounts).

# ---- build: compile src/, workflows/, activities/ and examples/ into dist/ ----
FROM node:24.22.3-bookworm-slim AS build
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` builds, and the sources are not here yet.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY examples ./examples
RUN npm run build

# ---- dependencies: production node_modules only ----
FROM node:24.22.3-bookworm-slim AS deps
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
# Manifests first: this layer is rebuilt only when the dependencies change, not on every source edit.
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts

# ---- runtime ----
FROM node:24.22.3-bookworm-slim AS runtime
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    TOOLGATE_DATA_DIR=/data \
    TOOLGATE_CONFIG=/app/dist/examples/toolgate.config.js
WORKDIR /app

# Application files stay owned by root, so the unprivileged `node` user cannot modify the code it runs.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY bin ./bin
COPY --from=build /app/dist ./dist

# The only writable place: a named volume is mounted here and inherits this ownership when first created.
RUN mkdir -p /data && chown node:node /data

USER node

# SIGTERM handling: compose runs this with `init: true`, so PID 1 is a real init that forwards signals,
# and they reach the worker itself: node runs the compiled CLI directly, with no npx wrapper to relay them.
CMD ["node", "bin/toolgate.js", "worker"]
