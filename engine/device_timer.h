/* device_timer.h — device time from CUDA events around a phase, like any GPU program
 * times its work (on simcuda the events carry simulated time). A failing event call
 * only turns the timer off (ok becomes false). */
#ifndef TM_ENGINE_DEVICE_TIMER_H
#define TM_ENGINE_DEVICE_TIMER_H

#include <stdbool.h>

#include "engine/driver.h"

typedef struct device_timer {
    const tm_driver *drv;
    CUevent start, end;
    bool ok;
} device_timer;

void device_timer_open(device_timer *t, const tm_driver *drv);
void device_timer_start(device_timer *t);
/* Milliseconds since device_timer_start on the device's clock (the host waits for the end). */
double device_timer_stop(device_timer *t);
void device_timer_close(device_timer *t);

#endif /* TM_ENGINE_DEVICE_TIMER_H */
