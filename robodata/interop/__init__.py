"""Moving data in and out: LeRobot v3 export and import, ALOHA / ACT HDF5 import."""

from robodata.interop.lerobot_export import ExportResult, export_lerobot

__all__ = ["ExportResult", "export_lerobot"]
