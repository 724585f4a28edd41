"""Which packages the wheel installs, and under which names (pyproject.toml holds everything else).

Why a setup.py: the repository's folders install under the project's own top-level names (`agents` as
`harmonies_agents`, `experiments` as `harmonies_experiments`, `benchmarks` as `harmonies_benchmarks`: generic names
like `agents` collide with other distributions and users' own modules), and a static `packages` list in
pyproject.toml cannot both rename a folder and find its subpackages: here every subpackage is found, so a new one
(e.g. `agents/mlp/`) needs no edit. From a checkout the folders also import under their own names.
"""
from setuptools import find_packages, setup

#: repository folder -> the top-level name it installs under
INSTALLED_AS = {"harmonies_env": "harmonies_env", "harmonies_apps": "harmonies_apps", "agents": "harmonies_agents",
                "experiments": "harmonies_experiments", "benchmarks": "harmonies_benchmarks"}


def packages() -> list[str]:
    """Every package under the folders of INSTALLED_AS, by its installed name."""
    found = find_packages(include=[name for top in INSTALLED_AS for name in (top, f"{top}.*")])
    return sorted(INSTALLED_AS[p.partition(".")[0]] + p[len(p.partition(".")[0]):] for p in found)


setup(packages=packages(), package_dir={new: old for old, new in INSTALLED_AS.items() if new != old})
