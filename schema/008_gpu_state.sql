-- 008_gpu_state.sql: the GPU's state while a final job's paired rounds ran
-- (common/gt_gpu_state.h), carried by each of its paired results: the JSON
-- object {"samples","rounds","sm_clock_min_mhz","sm_clock_median_mhz",
-- "power_max_w","temp_max_c","throttled_frac"} as the worker reported it
-- (checked by the dispatcher). NULL: nothing recorded (screen results, the
-- cpu backend, a worker without NVML, results from before this version).
ALTER TABLE results ADD COLUMN gpu_state TEXT;
