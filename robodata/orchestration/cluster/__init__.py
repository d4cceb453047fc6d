"""What a robodata cluster (deploy/) adds to Dagster's PostgreSQL storage and Celery run launcher:
runs whose worker is lost are noticed, terminate stops a run, and the webserver rides out a
PostgreSQL restart. Named in deploy/dagster.yaml; of robodata it imports only the reader (for
``deploy/cluster.sh wait``) and the run statuses ``_instance`` names, never the definitions."""
