"""When2Call data: the example model, a line-checking loader and stratified subsampling."""

from w2c_tui.data.when2call import (
    BUNDLED_PATH,
    DataError,
    Example,
    load_examples,
    select_examples,
)

__all__ = ["BUNDLED_PATH", "DataError", "Example", "load_examples", "select_examples"]
