"""Dictionary loading shared by the plugin's tasks."""

import logging

from fairseq.data import Dictionary

logger = logging.getLogger(__name__)

MASK_SYMBOL = "<mask>"


def load_dictionary_with_mask(filename: str) -> Dictionary:
    """Load a fairseq ``dict.txt`` and make sure it holds ``<mask>``.

    ``<mask>`` is appended (so existing ids are unchanged) when missing.
    """
    dictionary = Dictionary.load(filename)
    if MASK_SYMBOL not in dictionary:
        dictionary.add_symbol(MASK_SYMBOL)
        logger.info(
            "%s has no %s symbol: added it as id %d", filename, MASK_SYMBOL, dictionary.index(MASK_SYMBOL)
        )
    return dictionary
