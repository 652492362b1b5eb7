# syntax=docker/dockerfile:1
# toolgate worker image. Build: `docker build -t toolgate-worker .` (docker-compose.yml builds it too).
#
# The worker runs the TypeScript sources directly: bin/toolgate.js loads tsx (a regular, production
# dependency) in its own process, so there is no compile step and the image needs no dev dependencies. No secret is baked in: credentials
# and the approval public key arrive at run time (environment / read-only mounts).

# ---- dependencies: production node_modules only ----
FROM node:20.20.2-bookworm-slim AS deps
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
# Manifests first: this layer is rebuilt only when the dependencies change, not on every source edit.
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev

# ---- runtime ----
FROM node:20.20.2-bookworm-slim AS runtime
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    TOOLGATE_DATA_DIR=/data
WORKDIR /app

# Application files stay owned by root, so the unprivileged `node` user cannot modify the code it runs.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities

# The only writable place: a named volume is mounted here and inherits this ownership when first created.
RUN mkdir -p /data && chown node:node /data

USER node

# SIGTERM handling: compose runs this with `init: true`, so PID 1 is a real init that forwards signals,
# and they reach the worker itself: node runs it directly, with no npx or tsx wrapper to relay them.
CMD ["node", "bin/toolgate.js", "worker"]
