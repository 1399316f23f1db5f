"""Sync safety on PostgreSQL: the folder backend's tests, against a fresh schema (the pipeline
is shared; locations live in ``documents.location`` there too)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import beleg
from tests.ingest.test_sync_safety import (  # noqa: F401 - collected here against PostgreSQL
    test_a_failing_file_says_its_stored_version_is_kept,
    test_a_file_of_the_same_folder_name_does_not_replace_a_moved_document,
    test_a_folder_whose_files_were_all_emptied_is_held_like_a_vanished_one,
    test_a_moved_file_edited_on_the_way_is_refused_with_how_to_resolve,
    test_an_emptied_file_keeps_its_document_and_says_so_and_sync_deletes_it,
    test_one_file_is_one_document_whichever_root_it_was_first_ingested_through,
    test_sync_of_a_path_whose_files_are_all_gone_deletes_nothing_unless_allowed,
)


@pytest.fixture()
def kb(pg_location: str, embedder: Any) -> Iterator[Any]:
    """A fresh PostgreSQL index per test (its schema is dropped by ``pg_location``)."""
    with beleg.open(pg_location, embedder=embedder) as base:
        yield base
