/* Levelled logging to stderr. The level comes from the REMAT_LOG environment
 * variable (error, warn, info, debug, in any case; default warn, and a warning
 * for any other value) so library code can explain
 * itself without a global switch anyone has to set. Under mpirun, info and
 * debug lines come from rank 0 only, and other ranks' warnings and errors
 * name their rank. */
#ifndef REMAT_LOG_H
#define REMAT_LOG_H

typedef enum rm_log_level { RM_LOG_ERROR = 0, RM_LOG_WARN, RM_LOG_INFO, RM_LOG_DEBUG } rm_log_level;

rm_log_level rm_log_threshold(void);
void rm_log(rm_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define RM_LOG_ERROR(...) rm_log(RM_LOG_ERROR, __VA_ARGS__)
#define RM_LOG_WARN(...) rm_log(RM_LOG_WARN, __VA_ARGS__)
#define RM_LOG_INFO(...) rm_log(RM_LOG_INFO, __VA_ARGS__)
#define RM_LOG_DEBUG(...) rm_log(RM_LOG_DEBUG, __VA_ARGS__)

#endif
