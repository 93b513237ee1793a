-- 004_worker_gen_device.sql: the device limits a cuda worker's generated
-- families prune with ("gen_device" of the register message, proto/
-- PROTOCOL.md), as gen/gen_dev.h's canonical JSON text. NULL for workers
-- that did not send it (cpu, older workers): GET /v1/runs/{id}/space/...
-- then falls back to gt_gen_dev_default's limits for the worker's arch.
-- Nullable and without a default, so ADD COLUMN upgrades existing rows in
-- place.
ALTER TABLE workers ADD COLUMN gen_device TEXT;
