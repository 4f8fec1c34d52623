// The tuning report: an HTML page with an SVG plot per task of the best time found against
// trials, and one of the estimated end-to-end latency against all trials.
#pragma once
#include <string>

#include "autotune/tuner.h"

namespace tessera::autotune {

void write_report(const TuneResult& result, const std::string& path);
// The page itself (what write_report writes).
std::string report_html(const TuneResult& result);

}  // namespace tessera::autotune
