# pulseboard: one image for every role (serve --role ingest|projectors|api|thesis-reader).
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.
# Debian (glibc), not Alpine: the KurrentDB client's native bridge ships a linux-x64-gnu binary.
FROM node:24.9.0-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Production dependencies only, from the lockfile. swagger-ui-dist (the /docs page) depends on
# @scarf/scarf, whose install script would report the installation over the network: turned off.
ENV SCARF_ANALYTICS=false
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

COPY . .
# The embedded default writes under ./data; the distributed roles keep nothing on disk.
RUN mkdir -p /app/data && chown node:node /app/data

# Listen on every interface inside the container (the default 127.0.0.1 is unreachable from outside).
ENV HOST=0.0.0.0 PORT=8080
EXPOSE 8080

# The node image's unprivileged user.
USER node

# Memory (issue 12, docs/decisions.md "Server memory at 1M projects"): two glibc malloc arenas instead of
# one per thread that mallocs, and an 8 MB semi-space instead of V8's default (a 128 MB young generation).
ENV MALLOC_ARENA_MAX=2
CMD ["node","--disable-warning=ExperimentalWarning","--max-semi-space-size=8","--heap-growing-percent=50","bin/pulseboard.ts","serve"]
