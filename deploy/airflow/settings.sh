# Sourced by standalone.sh and by deploy/airflow/airflow: the one place that says where Airflow
# keeps its state for tierlens (AIRFLOW_HOME under TIERLENS_HOME) and how it is configured, so the
# service and a command typed in a second shell with only TIERLENS_HOME set find the same
# database, DAG folder and settings.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${AIRFLOW_VENV:-$repo/.venv-airflow}"
# `airflow standalone` starts its scheduler, DAG processor, triggerer and API server as `airflow`
# from PATH: without this venv's bin there, each dies (FileNotFoundError) and nothing is scheduled.
export PATH="$venv/bin:$PATH"
# The UI and API on loopback unless the site says otherwise (AIRFLOW__API__HOST=0.0.0.0); tasks
# reach the execution API on the same port, wherever it is.
export AIRFLOW__API__HOST="${AIRFLOW__API__HOST:-127.0.0.1}"
export AIRFLOW__API__PORT="${AIRFLOW__API__PORT:-8080}"
api_host="$AIRFLOW__API__HOST"
[ "$api_host" = 0.0.0.0 ] && api_host=127.0.0.1
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="${AIRFLOW__CORE__EXECUTION_API_SERVER_URL:-http://$api_host:$AIRFLOW__API__PORT/execution/}"
export TIERLENS_HOME="${TIERLENS_HOME:-$HOME/.local/share/tierlens}"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$TIERLENS_HOME/airflow}"
export AIRFLOW__CORE__DAGS_FOLDER="$repo/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
# Cosmos runs `dbt ls` while parsing the transform DAG; the default 30 s is tight on a small host.
export AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT=${AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT:-120}
# ...and the DAG processor kills a file's parse after 50 s by default, whatever the import timeout.
export AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT=${AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT:-$AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT}
# Tasks report to the API server over HTTP; on a busy small host with SQLite an answer can take
# longer than Airflow's 5 s, and a task whose start is not acknowledged is killed (ReadTimeout).
export AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT=${AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT:-30}
export AIRFLOW__COSMOS__ENABLE_TELEMETRY=False DO_NOT_TRACK=1 SCARF_NO_ANALYTICS=true
# Cosmos' watcher producer otherwise rewrites an Airflow Variable holding every XCom it has pushed
# so far, at each push (one a node, during the build); off, it writes that backup once, when the
# build fails, which is when a retry of the producer restores it (tierlens never retries it).
export AIRFLOW__COSMOS__ENABLE_WATCHER_RELIABLE_RETRY="${AIRFLOW__COSMOS__ENABLE_WATCHER_RELIABLE_RETRY:-False}"
# Cosmos' cache of dbt ls and profiles beside the rest of tierlens' state, not in the system's
# temporary folder (cleaned at boot, shared with every user).
export AIRFLOW__COSMOS__CACHE_DIR="${AIRFLOW__COSMOS__CACHE_DIR:-$TIERLENS_HOME/cache/cosmos}"
# Task slots sized to the host: Airflow's default of 32 starts 32 LocalExecutor worker processes,
# which a small host pays for in memory. Two per core, at least 4: the transform's dbt build holds
# one slot; its per-model tasks start in the triggerer and take a slot only to report a failure.
cores="$(nproc 2>/dev/null || echo 2)"
export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-$(( 2 * cores > 4 ? 2 * cores : 4 ))}"
export DBT_SEND_ANONYMOUS_USAGE_STATS=False
export TIERLENS_DBT_EXECUTABLE="${TIERLENS_DBT_EXECUTABLE:-$repo/.venv/bin/dbt}"
