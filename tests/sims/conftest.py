"""The Monte Carlo tests' Dask cluster: the distributed tests' two in-process CPU workers."""

from tests.distributed.conftest import client  # noqa: F401
