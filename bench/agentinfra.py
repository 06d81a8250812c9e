"""The infra project of the agent world: terraform, kubectl and make for the company's services."""

from __future__ import annotations

import random

from bench.agentkinds import Kind, Project, Slots, Step, commit_ok, hex_digits


def _service(rng: random.Random) -> Slots:
    return {"svc": rng.choice(["api", "worker", "billing", "gateway"]), "sha": hex_digits(rng, 7)}


def _provider(rng: random.Random) -> Slots:
    major, minor = rng.randint(3, 6), rng.randint(5, 40)
    return {
        "provider": rng.choice(["aws", "google", "cloudflare", "helm", "kubernetes"]),
        "ver": f"{major}.{minor}",
        "prev": f"{major}.{minor - rng.randint(1, 5)}",
    }


DEPLOY = Kind(
    project="infra",
    name="deploy-staging",
    steps=(
        Step("Bash", "make image SERVICE={svc} TAG={sha}", known=0.6,
             ok="docker build -t registry.internal/{svc}:{sha} services/{svc}\n"
             "Successfully tagged registry.internal/{svc}:{sha}",
             wrong="make image TAG={sha}", wrong_error="Exit code 2\nMakefile:14: *** SERVICE is not set.  Stop."),
        Step("Bash", "make push SERVICE={svc} TAG={sha}", known=0.55,
             ok="The push refers to repository [registry.internal/{svc}]\n{sha}: digest: sha256:9f1c size: 1786"),
        Step("Bash", "kubectl config use-context staging", known=0.5, ok='Switched to context "staging".'),
        Step("Bash", "kubectl -n staging set image deployment/{svc} {svc}=registry.internal/{svc}:{sha}",
             known=0.6, ok="deployment.apps/{svc} image updated"),
        # Watching the rollout changes nothing, it only shows how the deploy went.
        Step("Bash", "kubectl -n staging rollout status deployment/{svc} --timeout=120s", key=False,
             known=0.6, check=True, ok='deployment "{svc}" successfully rolled out',
             fail='Waiting for deployment "{svc}" rollout to finish: 1 old replicas are pending termination...\n'
             'error: deployment "{svc}" exceeded its progress deadline',
             wrong="kubectl rollout status deployment/{svc}",
             wrong_error='Exit code 1\nError from server (NotFound): deployments.apps "{svc}" not found'),
    ),
    prompts=(
        "deploy {svc} to staging", "can you push {sha} of {svc} to staging?", "put {svc}@{sha} on staging",
        "ship the latest {svc} to staging please", "staging deploy for {svc}, commit {sha}",
        "roll out {svc} {sha} on staging", "need {svc} on staging to test the fix ({sha})",
        "deploy {sha} to staging ({svc})", "update staging {svc} to {sha}",
        "get {svc} {sha} running on staging", "please deploy {svc} to the staging cluster",
        "redeploy {svc} on staging with {sha}",
    ),
    complaints=(
        "staging still runs the old {svc} build", "{svc} pods are in ImagePullBackOff on staging",
        "wait, did you deploy that to the prod context??",
    ),
    slots=_service,
)  # fmt: skip

BUMP = Kind(
    project="infra",
    name="bump-dependency",
    steps=(
        Step("Edit", "versions.tf", known=0.9, old='version = "~> {prev}"', ok='version = "~> {ver}"'),
        Step("Bash", "terraform init -upgrade", known=0.6,
             ok="Initializing provider plugins...\n- Installing hashicorp/{provider} v{ver}.0...\n"
             "Terraform has been successfully initialized!"),
        Step("Bash", "terraform plan -out=tfplan", known=0.8, check=True,
             ok="No changes. Your infrastructure matches the configuration.",
             fail="Error: Inconsistent dependency lock file\n\nprovider registry.terraform.io/hashicorp/"
             "{provider}: locked version selection {prev}.0 doesn't match the updated version constraints"),
        Step("Bash", "terraform apply tfplan", known=0.6, check=True,
             ok="Apply complete! Resources: 0 added, 0 changed, 0 destroyed.",
             fail="Error: Saved plan is stale"),
        Step("Bash", 'git commit -am "bump {provider} provider to {ver}"', key=False, known=0.8,
             ok=commit_ok("bump {provider} provider to {ver}")),
    ),
    prompts=(
        "bump the {provider} provider to {ver}", "upgrade terraform {provider} provider to {ver}",
        "we need {provider} provider {ver}, can you update it", "update the {provider} provider please",
        "move {provider} to ~> {ver}", "the {provider} provider is outdated, bump it to {ver}",
        "can you upgrade hashicorp/{provider} to {ver}", "provider bump: {provider} {ver}",
        "let's get the {provider} provider on {ver}", "bump {provider} to {ver} in versions.tf",
        "upgrade the {provider} provider and apply", "please take {provider} to {ver}",
    ),
    complaints=(
        "terraform plan fails in CI: the lock file doesn't match", "the lock file wasn't updated",
        "CI says the saved plan is stale",
    ),
    slots=_provider,
)  # fmt: skip

INFRA = Project(
    name="infra",
    cwd="/home/dev/infra",
    kinds=(DEPLOY, BUMP),
    files={
        "Makefile": "REGISTRY ?= registry.internal\n\nimage:\n\t@test -n \"$(SERVICE)\" || "
        "(echo SERVICE is not set; exit 2)\n\tdocker build -t $(REGISTRY)/$(SERVICE):$(TAG) services/$(SERVICE)\n",
        "versions.tf": 'terraform {{\n  required_providers {{\n    {provider} = {{\n      source  = '
        '"hashicorp/{provider}"\n      version = "~> {prev}"\n    }}\n  }}\n}}\n',
        "README.md": "# infra\n\nStaging: `kubectl config use-context staging`.\n",
        "k8s/staging/api.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n",
    },
    globs=(
        ("**/*.tf", ("main.tf", "versions.tf", "envs/staging/main.tf", "modules/db/main.tf")),
        ("k8s/**/*.yaml", ("k8s/staging/api.yaml", "k8s/staging/worker.yaml", "k8s/prod/api.yaml")),
    ),
    greps=(
        ("required_providers", ("versions.tf",)), ("image:", ("k8s/staging/api.yaml", "k8s/prod/api.yaml")),
        ("SERVICE", ("Makefile",)),
    ),
    looks=(
        ("git status", "On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing to commit, working tree clean"),
        ("ls", "Makefile\nREADME.md\nenvs\nk8s\nmain.tf\nmodules\nservices\nversions.tf"),
        ("kubectl config current-context", "prod"),
        ("kubectl -n staging get pods", "NAME                   READY   STATUS    RESTARTS   AGE\napi-7d9f8c-x2k4q       1/1     Running   0          2d"),
        ("terraform version", "Terraform v1.9.5\non linux_amd64"),
    ),
    extras=(
        ("terraform fmt -recursive", "modules/db/main.tf"),
        ("docker images | head -5", "REPOSITORY                 TAG       IMAGE ID       CREATED\nregistry.internal/api      4be1c0d   0c2d1e3f4a5b   2 days ago"),
        ("kubectl get nodes", "NAME       STATUS   ROLES    AGE   VERSION\nnode-a     Ready    <none>   41d   v1.30.4"),
    ),
    follow_ups=(
        ("can you show me the pods now", Step("Bash", "kubectl -n staging get pods",
                                              ok="NAME                   READY   STATUS    RESTARTS   AGE\n{svc}-6c8d-x1       1/1     Running   0          1m")),
        ("note it in the README", Step("Edit", "README.md", old="Staging: `kubectl config use-context staging`.",
                                       ok="Staging: `kubectl config use-context staging` (see Makefile).")),
    ),
)  # fmt: skip
