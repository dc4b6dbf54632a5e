"""Real graph datasets: bundled, local folder, or a checksummed download (mirror or source)."""

from ._loaders import (
                       BUNDLED,
                       DATASETS,
                       fetch_file,
                       get_data_home,
                       list_datasets,
                       load_citeseer,
                       load_cora,
                       load_dataset,
)

__all__ = ["BUNDLED", "DATASETS", "fetch_file", "get_data_home", "list_datasets", "load_citeseer",
           "load_cora", "load_dataset"]
