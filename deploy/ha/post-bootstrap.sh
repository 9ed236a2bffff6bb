#!/bin/sh
# Run once by Patroni on the node that made the cluster: the service's role and database.
# $1 is a connection string to the new primary.
set -eu
psql -v ON_ERROR_STOP=1 -d "$1" \
  -v user="${BILLING_DB_USER:-billing}" -v password="${BILLING_DB_PASSWORD:-billing}" -v db="${BILLING_DB_NAME:-billing}" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'password';
CREATE DATABASE :"db" OWNER :"user";
SQL
