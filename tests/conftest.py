"""Shared fixtures: a tiny dictionary, one intra-op thread for tiny-model modules."""

import pytest
import torch

import unilm_fairseq  # noqa: F401  (registers the plugin's parts)

from .helpers.models import make_dictionary


@pytest.fixture
def dictionary():
    return make_dictionary()


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op thread for a module of tiny-model tests: their tensors gain nothing from more, and on a
    shared machine the threads' syncs are slow."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
