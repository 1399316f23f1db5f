"""The backend conformance suite (beleg.testing.conformance) against a real PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from beleg.index.postgres.store import PostgresStore
from beleg.testing.conformance import StoreConformance


class TestPostgresConformance(StoreConformance):
    @pytest.fixture
    def location(self, pg_location: str) -> Any:  # one schema per test instead of a folder
        return pg_location

    def open_store(self, location: Any) -> PostgresStore:
        return PostgresStore(str(location))
