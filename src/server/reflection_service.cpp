#include "corvid/server/reflection.hpp"

namespace corvid {

// describers_ is only written before start() (server_core::add_handler refuses later
// registrations, under the mutex async_start() takes before the reactors exist), so the
// reactors read it without a lock.
std::string reflection_service::describe() const { return detail::render_schema(describers_); }

}  // namespace corvid
