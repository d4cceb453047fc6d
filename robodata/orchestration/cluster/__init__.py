"""What a robodata cluster (deploy/) adds to Dagster's PostgreSQL storage and Celery run launcher:
runs whose worker is lost are noticed, terminate stops a run, and the webserver rides out a
PostgreSQL restart. Named in deploy/dagster.yaml; imports nothing else of robodata."""
