#!/usr/bin/env bash
# A small site: Airflow standalone (scheduler, DAG processor, API server and triggerer in one
# process, SQLite, LocalExecutor) on the tierlens host. Run from the checkout, as the tierlens user:
#   deploy/airflow/standalone.sh
# Settings (see dags/README.md) come from the environment or from Airflow Variables.
set -euo pipefail
source "$(dirname "$0")/settings.sh"
if [ ! -x "$venv/bin/airflow" ]; then
  make -C "$repo" setup airflow-venv
fi
mkdir -p "$AIRFLOW_HOME"
airflow db migrate
airflow pools set "${TIERLENS_POOL:-tierlens_warehouse}" 1 "tierlens: one DuckDB writer at a time"
# Stop it with SIGINT or SIGTERM (Ctrl-C, kill, systemd): either makes it stop its components
# before exiting, even when the shell that started this script ignored SIGINT (standalone.py).
# Its components start as `airflow` from PATH: loopback/airflow starts them without the log
# servers, which would listen on every interface (see that file).
export TIERLENS_AIRFLOW_REAL="$venv/bin/airflow"
PATH="$repo/deploy/airflow/loopback:$PATH" exec "$venv/bin/python" "$repo/deploy/airflow/standalone.py"
