/* aisrv MCU client — the link root for the size report: references every public function, so a section-garbage-
 * collected link keeps exactly what an application using the whole API would carry. Not a program. */
#include "aisrv/mcu/aisrv_mcu.h"

typedef void (*any_fn)(void);

/* Every public entry point (cast to a common type only to be listed). */
const any_fn aisrv_mcu_api[] = {
    (any_fn)aisrv_mcu_default_config, (any_fn)aisrv_mcu_init,          (any_fn)aisrv_mcu_sync,
    (any_fn)aisrv_mcu_strerror,       (any_fn)aisrv_mcu_frame,         (any_fn)aisrv_mcu_exchange,
    (any_fn)aisrv_mcu_call,           (any_fn)aisrv_mcu_read_answer,   (any_fn)aisrv_mcu_hello,
    (any_fn)aisrv_mcu_get_id,         (any_fn)aisrv_mcu_get_version,   (any_fn)aisrv_mcu_get_spec,
    (any_fn)aisrv_mcu_get_status,     (any_fn)aisrv_mcu_input_length,  (any_fn)aisrv_mcu_output_length,
    (any_fn)aisrv_mcu_load_model,     (any_fn)aisrv_mcu_load_model_from, (any_fn)aisrv_mcu_load_model_from_flash,
    (any_fn)aisrv_mcu_unload_model,   (any_fn)aisrv_mcu_set_input,     (any_fn)aisrv_mcu_start_inference,
    (any_fn)aisrv_mcu_cancel,         (any_fn)aisrv_mcu_get_output,    (any_fn)aisrv_mcu_get_timings,
    (any_fn)aisrv_mcu_get_debug_log,
};
