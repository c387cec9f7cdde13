# policyd with its bundled rules (package data; --rules DIR for others); mount a catalog directory at /catalog.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY policyd policyd
# policyd/rules links to rules/: the wheel ships the bundled rules as package data
COPY rules rules
COPY clients clients
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --system --uid 10001 --home-dir /nonexistent policyd
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
COPY examples/catalog /catalog
USER 10001
EXPOSE 50051 9090
# Plaintext on every interface, said explicitly (--insecure), so `docker run -p 50051:50051` works
# as it did; in production give --tls-cert/--tls-key (and --tls-client-ca, --authz), or run it as
# clients/controller/deploy/deployment.yaml does (TLS and mTLS, health for the kubelet).
ENTRYPOINT ["policyd", "--catalog", "/catalog", "--listen", "0.0.0.0:50051", "--insecure", "--metrics-port", "9090"]
