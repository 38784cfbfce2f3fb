#include "timer_access.hpp"

namespace corvid::detail {

timer_storage::~timer_storage() { timer_access::destroy(*this); }

}  // namespace corvid::detail
