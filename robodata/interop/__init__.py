"""Moving data in and out: LeRobot v3 export and import, ALOHA / ACT HDF5 import."""

from robodata.interop.lerobot_export import ExportResult, export_lerobot
from robodata.interop.lerobot_import import ImportResult, import_lerobot

__all__ = ["ExportResult", "ImportResult", "export_lerobot", "import_lerobot"]
