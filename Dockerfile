# The one image of every container the chart runs (charts/policyd names it policyd:<appVersion>):
#   docker build -t policyd:0.1.0 .
# policyd with its bundled rules (package data), policyctl, policy-render, policy-controller and
# policy-webhook. Run alone, it serves the example catalog (mount your own at /catalog).
ARG VERSION=0.1.0

FROM python:3.11-slim AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# durable-rules builds a C extension; the compiler is whatever the base image's Debian release ships
# (a pinned version would break the build when python:3.11-slim moves to the next release)
# hadolint ignore=DL3008
RUN apt-get update \
  && apt-get install -y --no-install-recommends build-essential \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY policyd policyd
# policyd/rules links to rules/: the wheel ships the bundled rules as package data
COPY rules rules
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
ARG VERSION
LABEL org.opencontainers.image.title="policyd" \
  org.opencontainers.image.description="OME runtime-selection policy: policyd, policyctl, policy-render, policy-controller, policy-webhook" \
  org.opencontainers.image.version="${VERSION}"
RUN useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent policyd
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
COPY examples/catalog /catalog
# HOME is /nonexistent: the parse cache goes under /tmp (an emptyDir in the chart, whose root
# filesystem is read-only); nothing writes bytecode beside the installed packages
ENV XDG_CACHE_HOME=/tmp/cache \
  PYTHONDONTWRITEBYTECODE=1 \
  PYTHONUNBUFFERED=1
USER 10001:10001
EXPOSE 50051 9090
# Plaintext on every interface, said explicitly (--insecure), so `docker run -p 50051:50051` works;
# in a cluster the chart runs each command with TLS, mTLS and --authz instead.
ENTRYPOINT ["policyd", "--catalog", "/catalog", "--listen", "0.0.0.0:50051", "--insecure", "--metrics-port", "9090"]
