"""Moving data in and out: LeRobot v3 export and import, ALOHA / ACT HDF5 import."""

from robodata.interop.hdf5_import import import_hdf5
from robodata.interop.import_result import ImportResult
from robodata.interop.lerobot_export import ExportResult, export_lerobot
from robodata.interop.lerobot_import import import_lerobot

__all__ = ["ExportResult", "ImportResult", "export_lerobot", "import_hdf5", "import_lerobot"]
