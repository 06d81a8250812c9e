"""The webapp project of the agent world: a TypeScript front end built with npm and vite."""

from __future__ import annotations

import random

from bench.agentkinds import (
    VITEST_FAIL,
    VITEST_OK,
    Kind,
    Project,
    Slots,
    Step,
    commit_ok,
    version_slots,
)


def _package(rng: random.Random) -> Slots:
    name = rng.choice(
        ["react-router-dom", "vite", "zod", "axios", "date-fns", "@tanstack/react-query"]
    )
    return {"pkg": name, "ver": f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"}


TSC_FAIL = (
    "src/routes/Checkout.tsx(41,18): error TS2339: Property 'useNavigation' does not exist on "
    "type 'typeof import(\"{pkg}\")'.\nFound 1 error in src/routes/Checkout.tsx:41"
)
VITEST_HANGS = "Exit code 124\nCommand timed out after 2m 0.0s\n DEV  v1.6.0 /home/dev/webapp\n\n watching for file changes..."

RELEASE = Kind(
    project="webapp",
    name="release",
    steps=(
        Step("Bash", "npm ci", key=False, known=0.6,
             ok="added 812 packages, and audited 813 packages in 14s\n\nfound 0 vulnerabilities"),
        Step("Bash", "npm run build", known=0.8, check=True,
             ok="> webapp@{prev} build\n> tsc -b && vite build\n\nvite v5.4.8 building for production...\n"
             "✓ 412 modules transformed.\n✓ built in {secs}s",
             fail="> webapp@{prev} build\n> tsc -b && vite build\n\nsrc/api/client.ts(12,3): error TS2322"),
        Step("Bash", "npm test -- --run", known=0.6, check=True, ok=VITEST_OK, fail=VITEST_FAIL,
             wrong="npm test", wrong_error=VITEST_HANGS),
        Step("Bash", 'npm version {version} -m "chore(release): %s"', known=0.5, ok="v{version}"),
        Step("Bash", "git push origin main --follow-tags", known=0.55,
             ok="To github.com:acme/webapp.git\n * [new tag]         v{version} -> v{version}"),
        Step("Bash", "gh release create v{version} --generate-notes", known=0.45,
             ok="https://github.com/acme/webapp/releases/tag/v{version}"),
    ),
    prompts=(
        "cut release {version}", "can you ship version {version}?", "release {version} please",
        "tag and publish a new release, {version}", "time for a release: {version}",
        "we're ready for {version}, do the release", "do the release for {version}",
        "new release pls, version {version}", "release the frontend as {version}",
        "prepare {version} for release please", "ship {version} of the webapp", "let's get v{version} out",
    ),
    complaints=(
        "there's no release page for v{version} on github", "the v{version} tag isn't on github",
        "the build on the release tag is broken",
    ),
    slots=version_slots,
)  # fmt: skip

BUMP = Kind(
    project="webapp",
    name="bump-dependency",
    steps=(
        Step("Bash", "npm install {pkg}@{ver}", known=0.95,
             ok="changed 3 packages, and audited 813 packages in 4s\n\nfound 0 vulnerabilities"),
        Step("Bash", "npx tsc --noEmit", known=0.5, check=True, ok="", fail=TSC_FAIL),
        Step("Bash", "npm test -- --run", known=0.6, check=True, ok=VITEST_OK, fail=VITEST_FAIL,
             wrong="npm test", wrong_error=VITEST_HANGS),
        Step("Bash", 'git commit -am "chore(deps): bump {pkg} to {ver}"', key=False, known=0.8,
             ok=commit_ok("chore(deps): bump {pkg} to {ver}")),
    ),
    prompts=(
        "bump {pkg} to {ver}", "upgrade {pkg} to {ver} please", "can you update {pkg}? {ver} is out",
        "dependabot wants {pkg} {ver}, do it by hand", "update {pkg} to the latest ({ver})",
        "we should be on {pkg} {ver}", "move us to {pkg}@{ver}", "please upgrade {pkg}",
        "{pkg} {ver} fixes our bug, upgrade to it", "bump the {pkg} dependency to {ver}",
        "get {pkg} up to date ({ver})", "upgrade {pkg} and make sure nothing breaks",
    ),
    complaints=(
        "typecheck fails on CI after the bump", "the app doesn't compile anymore",
        "tests are red after the {pkg} upgrade",
    ),
    slots=_package,
)  # fmt: skip

WEBAPP = Project(
    name="webapp",
    cwd="/home/dev/webapp",
    kinds=(RELEASE, BUMP),
    files={
        "package.json": '{{\n  "name": "webapp",\n  "version": "{prev}",\n  "scripts": {{\n'
        '    "build": "tsc -b && vite build",\n    "test": "vitest"\n  }}\n}}\n',
        "README.md": "# webapp\n\n`npm run dev` to start, `npm test` for the tests.\n",
        "src/main.tsx": "import React from 'react'\nimport ReactDOM from 'react-dom/client'\n",
        "vite.config.ts": "import {{ defineConfig }} from 'vite'\nexport default defineConfig({{}})\n",
    },
    globs=(
        ("src/**/*.tsx", ("src/main.tsx", "src/App.tsx", "src/routes/Checkout.tsx", "src/routes/Cart.tsx")),
        ("**/*.test.ts", ("src/cart.test.ts", "src/api/client.test.ts")),
    ),
    greps=(
        ("useNavigate", ("src/routes/Checkout.tsx", "src/App.tsx")), ("\"version\"", ("package.json",)),
        ("axios", ("src/api/client.ts",)),
    ),
    looks=(
        ("git status", "On branch main\nYour branch is up to date with 'origin/main'.\n\nnothing to commit, working tree clean"),
        ("ls", "README.md\nindex.html\nnode_modules\npackage-lock.json\npackage.json\nsrc\ntsconfig.json\nvite.config.ts"),
        ("npm ls {pkg}", "webapp@{prev} /home/dev/webapp\n└── {pkg}@6.22.3"),
        ("cat package.json", '{{\n  "name": "webapp",\n  "version": "{prev}"\n}}'),
        ("git log --oneline -5", "{sha7} fix cart badge\n1a2b3c4 checkout: keep the coupon"),
    ),
    extras=(
        ("npm outdated", "Package  Current  Wanted  Latest\nzod       3.22.4  3.23.8  3.23.8"),
        ("node --version", "v20.17.0"),
        ("npm run lint", "> webapp@{prev} lint\n> eslint src\n"),
    ),
    follow_ups=(
        ("also mention it in the README", Step("Edit", "README.md", old="`npm test` for the tests.",
                                               ok="`npm test -- --run` for the tests.")),
        ("can you run the linter", Step("Bash", "npm run lint", ok="> webapp@{prev} lint\n> eslint src\n")),
    ),
)  # fmt: skip
