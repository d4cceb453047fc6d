"""The two-table schema (gops.lance + frames.lance), schema metadata, ids and naming rules."""
