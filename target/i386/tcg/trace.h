#include "trace/trace-target_i386_tcg.h"
