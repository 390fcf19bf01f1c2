"""The redis-bf Redis module, built for this platform: ``path()`` is its ``libredis_bf.so``.

Installed by ``pip install 'redis-bf[server]'`` (``pip install --find-links DIR
'redis-bf[server]'`` from a folder of wheels, while no index has them; the ``redis-bf``
package's ``module_path()`` and ``redis-bf-server`` find it here), or on its own for a
``loadmodule`` line of a server of yours:

    redis-server --loadmodule "$(python -c 'import redis_bf_module; print(redis_bf_module.path())')"
"""

from pathlib import Path

__version__ = "0.1.0"


def path() -> Path:
    """The module's absolute path."""
    return Path(__file__).resolve().with_name("libredis_bf.so")
