# medialib as a container image: an example (see docs/operations.md, "Container image").
#
#   docker build -t medialib .
#   docker run -d --name medialib -p 8080:8080 -v medialib-data:/var/lib/medialib \
#       -e MEDIALIB_BASE_URL=https://media.example.edu medialib
#
# The container listens on 0.0.0.0:8080, which other machines can reach, so medialib refuses
# to start in plain HTTP unless told where TLS happens. Set ONE of:
#   - MEDIALIB_BASE_URL=https://...   the public URL of the TLS-terminating reverse proxy in
#                                     front (add MEDIALIB_TRUSTED_PROXIES=<its address> so
#                                     X-Forwarded-* from it are believed);
#   - MEDIALIB_TLS_CERT / MEDIALIB_TLS_KEY   PEM files mounted into the container (HTTPS here).
# No default is set on purpose: a wrong base URL would end up in every permLink and as the
# OAuth issuer.
#
# The data (the SQLite database) lives in the volume /var/lib/medialib. For PostgreSQL set
# MEDIALIB_DATABASE_URL=postgres://USER:PASSWORD@HOST/DB instead. Administration runs the same
# binary: docker exec -it medialib medialib user add --unique-id alice --password-stdin
#
# Not built in this repository's CI (it has no Docker engine); tests/integration/readme.rs
# checks that the paths and settings named here exist.

# ---- build -------------------------------------------------------------------------------
FROM rust:1-bookworm AS build
WORKDIR /src
# libpq for the PostgreSQL backend (the official rust image ships libpq-dev already; this
# keeps the build working on slimmer bases). SQLite is compiled in (bundled).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq-dev \
    && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cargo build --release --locked -p medialib --bin medialib \
    && install -m 0755 target/release/medialib /usr/local/bin/medialib

# ---- run ---------------------------------------------------------------------------------
FROM debian:bookworm-slim
# libpq5: the PostgreSQL client library; ca-certificates: TLS to PostgreSQL and to an OpenID
# Connect provider; curl: the health check below; ffmpeg (and ffprobe): media processing,
# which `medialib serve` runs in-process (`workers`, default 1) and `medialib worker` runs on
# its own (util-linux's setpriv and chrt, which start the tools, are in every Debian image).
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl ffmpeg libpq5 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 medialib \
    && useradd --system --uid 10001 --gid medialib --home-dir /var/lib/medialib \
        --shell /usr/sbin/nologin medialib \
    && install -d -o medialib -g medialib -m 0750 /var/lib/medialib
COPY --from=build /usr/local/bin/medialib /usr/local/bin/medialib

ENV MEDIALIB_DATABASE_URL=sqlite:///var/lib/medialib/medialib.db \
    MEDIALIB_BIND=0.0.0.0:8080 \
    MEDIALIB_LOG_FORMAT=json
VOLUME ["/var/lib/medialib"]
WORKDIR /var/lib/medialib
USER medialib:medialib
EXPOSE 8080

# /healthz answers while the process runs; plain HTTP behind a proxy, HTTPS (self-signed or
# not, hence -k) when MEDIALIB_TLS_CERT/KEY are set.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD curl -fsS -o /dev/null http://127.0.0.1:8080/healthz \
        || curl -fsSk -o /dev/null https://127.0.0.1:8080/healthz \
        || exit 1

# SIGTERM (docker stop) drains in-flight requests for up to 30 seconds: give it
# `docker stop -t 40` (or stop_grace_period: 40s in compose).
STOPSIGNAL SIGTERM
ENTRYPOINT ["medialib"]
CMD ["serve"]
