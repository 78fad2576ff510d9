# The live autoscaler's image: `python -m autoscaler run`, non-root, read-only friendly.
# Build:  docker build -t ghcr.io/storage-autoscaler/storage-autoscaler:0.1.0 .
# The builder stage has pip and compilers; the final stage only the installed virtualenv.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/autoscaler
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY autoscaler ./autoscaler
COPY cloudproviders ./cloudproviders
COPY emulator ./emulator
COPY estimator ./estimator
COPY kube ./kube
COPY kubeapi ./kubeapi
COPY scheduling ./scheduling
COPY simulator ./simulator
# All three clouds: one image for EKS, GKE and AKS (the SDK is imported only when named).
RUN /opt/autoscaler/bin/pip install --no-compile ".[aws,gce,azure]" \
 && /opt/autoscaler/bin/python -m compileall -q /opt/autoscaler \
 && /opt/autoscaler/bin/pip uninstall -y pip setuptools

FROM python:3.11-slim
# No pip, setuptools or wheel in the final image: nothing installs at run time.
RUN python -m pip uninstall -y pip setuptools wheel \
 && rm -rf /root/.cache
COPY --from=build /opt/autoscaler /opt/autoscaler
ENV PATH=/opt/autoscaler/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The official cluster-autoscaler chart runs `./cluster-autoscaler` from `/`: the same
# flags reach `run`, so that chart can drive this image too.
RUN printf '#!/bin/sh\nexec python -m autoscaler run "$@"\n' > /cluster-autoscaler \
 && chmod 0755 /cluster-autoscaler
# distroless's "nonroot" uid/gid, matching the Deployment's runAsUser.
USER 65532:65532
EXPOSE 8085
ENTRYPOINT ["python", "-m", "autoscaler", "run"]
