"""Pure functions and data: masks, layouts, losses, tokenizers, data preparation, scoring, recipes."""
