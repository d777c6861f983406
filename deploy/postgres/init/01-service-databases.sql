-- Run once by the postgres image on an empty data volume (docker-compose mounts this folder at
-- /docker-entrypoint-initdb.d). Each service owns its own database; POSTGRES_DB (electric) is
-- the shared scratch/admin database. deploy/postgres.sh creates the same set locally.
CREATE DATABASE electric_registration OWNER electric;
CREATE DATABASE electric_table OWNER electric;
CREATE DATABASE electric_wallet OWNER electric;
CREATE DATABASE electric_payout OWNER electric;
