/* device_timer.c — see device_timer.h. */
#include "engine/device_timer.h"

void device_timer_open(device_timer *t, const tm_driver *drv)
{
    t->drv = drv;
    t->start = t->end = NULL;
    t->ok = drv->cuEventCreate(&t->start, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
            drv->cuEventCreate(&t->end, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
}

void device_timer_start(device_timer *t)
{
    if (t->ok) t->ok = t->drv->cuEventRecord(t->start, NULL) == CUDA_SUCCESS;
}

double device_timer_stop(device_timer *t)
{
    float ms = 0;
    if (t->ok)
        t->ok = t->drv->cuEventRecord(t->end, NULL) == CUDA_SUCCESS &&
                t->drv->cuEventSynchronize(t->end) == CUDA_SUCCESS &&
                t->drv->cuEventElapsedTime(&ms, t->start, t->end) == CUDA_SUCCESS;
    return t->ok ? (double)ms : 0.0;
}

void device_timer_close(device_timer *t)
{
    if (t->start) t->drv->cuEventDestroy(t->start);
    if (t->end) t->drv->cuEventDestroy(t->end);
}
