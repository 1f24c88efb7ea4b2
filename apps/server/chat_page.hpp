#pragma once
// GET /: the chat page (chat_page.html, built into the binary by embed_text.py).
#include <string>

namespace minivllm::server {

const std::string& chat_page_html();

}  // namespace minivllm::server
