// The desktop's tools: what a computer-use model asks for (a screenshot, a
// click at x,y, keys in xdotool's names), each through the Sandbox's own
// action and its checks. Every definition names the screen's size, so the
// model knows the coordinates it may use.

#include <string>

#include "mayura/validate.hpp"
#include "tool_json.hpp"
#include "tool_maker.hpp"

namespace mayura::tool_maker {
namespace {

using nlohmann::json;
using tool_json::Input;

std::string size_text(const DesktopSize& s) { return std::to_string(s.width) + "x" + std::to_string(s.height); }

// The sandbox, when its screen is the one the model was told of: a
// coordinate is the model's idea of a place on that screen.
Sandbox on_screen(const ToolMaker::SandboxOf& sandbox_of, const DesktopSize& screen) {
  Sandbox sandbox = sandbox_of();
  const auto size = sandbox.desktop_size();
  if (!size) throw SandboxError(Reason::INVALID_INPUT, "the sandbox was created without a desktop");
  if (size->width != screen.width || size->height != screen.height) {
    throw SandboxError(Reason::INVALID_CONFIG, "the sandbox's screen is " + size_text(*size) + ", not the " +
                                                   size_text(screen) + " the tools describe");
  }
  return sandbox;
}

// Checked as the sandbox's limits layer will check it, before the sandbox
// is reached: a call refused for its input makes no per-run sandbox.
void check_first(const DesktopAction& action, const DesktopSize& screen) { check_desktop_action(action, screen); }

std::int64_t required_integer(const Input& input, const std::string& key, std::int64_t min, std::int64_t max) {
  const auto n = input.optional_integer(key, min, max);
  if (!n) throw SandboxError(Reason::INVALID_INPUT, "'" + key + "' is required");
  return *n;
}

json point_properties(const DesktopSize& s) {
  return {{"x", integer_property("pixels from the screen's left edge", 0, s.width - 1)},
          {"y", integer_property("pixels from the screen's top edge", 0, s.height - 1)}};
}

Point point_of(const Input& input, const DesktopSize& s) {
  return {static_cast<int>(required_integer(input, "x", 0, s.width - 1)),
          static_cast<int>(required_integer(input, "y", 0, s.height - 1))};
}

json with(json properties, const json& more) {
  for (const auto& [key, value] : more.items()) properties[key] = value;
  return properties;
}

MouseButton button_of(const Input& input) {
  const std::string name = input.optional_string("button").value_or("left");
  if (name == "left") return MouseButton::left;
  if (name == "middle") return MouseButton::middle;
  if (name == "right") return MouseButton::right;
  throw SandboxError(Reason::INVALID_INPUT, "'button' is left, middle or right");
}

ScrollDirection direction_of(const Input& input) {
  const std::string name = input.string("direction");
  if (name == "up") return ScrollDirection::up;
  if (name == "down") return ScrollDirection::down;
  if (name == "left") return ScrollDirection::left;
  if (name == "right") return ScrollDirection::right;
  throw SandboxError(Reason::INVALID_INPUT, "'direction' is up, down, left or right");
}

// The screen (or a region of it) as the image block model APIs take: base64
// PNG with its media type.
Tool screenshot_tool(const ToolMaker& maker, const DesktopSize& s) {
  const json region = {{"type", "object"},
                       {"properties",
                        {{"x", integer_property("left edge", 0, s.width - 1)},
                         {"y", integer_property("top edge", 0, s.height - 1)},
                         {"width", integer_property("width", 1, s.width)},
                         {"height", integer_property("height", 1, s.height)}}},
                       {"required", {"x", "y", "width", "height"}},
                       {"additionalProperties", false}};
  return maker.make(
      "screenshot", ToolEffect::read,
      "Take a screenshot of the sandbox's screen (" + size_text(s) +
          " pixels; x grows to the right, y downwards, 0,0 at the top left), or of a region of it. It comes back as "
          "a PNG image.",
      object_schema({{"region", region}}, {}),
      [s](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext& run) {
        const Input input(in, {"region"});
        ScreenshotOptions o;
        o.cancellation = run.cancellation;
        if (in.contains("region")) {
          const Input r(in["region"], {"x", "y", "width", "height"});
          o.region = Region{static_cast<int>(required_integer(r, "x", 0, s.width - 1)),
                            static_cast<int>(required_integer(r, "y", 0, s.height - 1)),
                            static_cast<int>(required_integer(r, "width", 1, s.width)),
                            static_cast<int>(required_integer(r, "height", 1, s.height))};
        }
        DesktopAction shot;
        shot.region = o.region;
        check_first(shot, s);
        const std::string png = on_screen(sandbox, s).screenshot(o);
        return json{{"type", "image"},
                    {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", tool_json::base64(png)}}}};
      });
}

Tool cursor_tool(const ToolMaker& maker, const DesktopSize& s) {
  return maker.make("cursor", ToolEffect::read, "Where the mouse pointer is on the " + size_text(s) + " screen.",
                    object_schema(json::object(), {}),
                    [s](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
                      const Input input(in, {});
                      const Point p = on_screen(sandbox, s).cursor_position();
                      return json{{"x", p.x}, {"y", p.y}};
                    });
}

Tool click_tool(const ToolMaker& maker, const DesktopSize& s) {
  return maker.make(
      "click", ToolEffect::write,
      "Click at x,y on the " + size_text(s) +
          " screen (0,0 is the top left), with a button (default left), count "
          "times (2: a double click).",
      object_schema(with(point_properties(s), {{"button", {{"type", "string"}, {"enum", {"left", "middle", "right"}}}},
                                               {"count", integer_property("clicks", 1, 3)}}),
                    {"x", "y"}),
      [s](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
        const Input input(in, {"x", "y", "button", "count"});
        const Point at = point_of(input, s);
        const MouseButton button = button_of(input);
        const int count = static_cast<int>(input.optional_integer("count", 1, 3).value_or(1));
        check_first(detail::click_action(at, button, count), s);
        on_screen(sandbox, s).click(at, button, count);
        return json{
            {"x", at.x}, {"y", at.y}, {"button", input.optional_string("button").value_or("left")}, {"count", count}};
      });
}

Tool move_tool(const ToolMaker& maker, const DesktopSize& s) {
  return maker.make("move", ToolEffect::write, "Move the mouse pointer to x,y on the " + size_text(s) + " screen.",
                    object_schema(point_properties(s), {"x", "y"}),
                    [s](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
                      const Input input(in, {"x", "y"});
                      const Point to = point_of(input, s);
                      check_first(detail::move_action(to), s);
                      on_screen(sandbox, s).move(to);
                      return json{{"x", to.x}, {"y", to.y}};
                    });
}

Tool drag_tool(const ToolMaker& maker, const DesktopSize& s) {
  const json point = object_schema(point_properties(s), {"x", "y"});
  return maker.make("drag", ToolEffect::write,
                    "Drag with the left button held: pressed at the path's first point on the " + size_text(s) +
                        " screen, moved through the others, released at the last.",
                    object_schema({{"path",
                                    {{"type", "array"},
                                     {"items", point},
                                     {"minItems", 2},
                                     {"maxItems", static_cast<std::int64_t>(kMaxDragPoints)}}}},
                                  {"path"}),
                    [s](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
                      const Input input(in, {"path"});
                      const json& path = in.contains("path") ? in["path"] : json();
                      if (!path.is_array() || path.size() < 2 || path.size() > kMaxDragPoints) {
                        throw SandboxError(
                            Reason::INVALID_INPUT,
                            "'path' is an array of 2 to " + std::to_string(kMaxDragPoints) + " points {x, y}");
                      }
                      std::vector<Point> points;
                      points.reserve(path.size());
                      for (const json& p : path) points.push_back(point_of(Input(p, {"x", "y"}), s));
                      check_first(detail::drag_action(points), s);
                      on_screen(sandbox, s).drag(points);
                      return json{{"points", points.size()}};
                    });
}

Tool scroll_tool(const ToolMaker& maker, const DesktopSize& s) {
  return maker.make(
      "scroll", ToolEffect::write,
      "Scroll the mouse wheel at x,y on the " + size_text(s) + " screen, amount steps in a direction.",
      object_schema(
          with(point_properties(s), {{"direction", {{"type", "string"}, {"enum", {"up", "down", "left", "right"}}}},
                                     {"amount", integer_property("wheel steps", 1, 100)}}),
          {"x", "y", "direction"}),
      [s](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
        const Input input(in, {"x", "y", "direction", "amount"});
        const Point at = point_of(input, s);
        const ScrollDirection direction = direction_of(input);
        const int amount = static_cast<int>(input.optional_integer("amount", 1, 100).value_or(1));
        check_first(detail::scroll_action(at, direction, amount), s);
        on_screen(sandbox, s).scroll(at, direction, amount);
        return json{{"x", at.x}, {"y", at.y}, {"direction", input.string("direction")}, {"amount", amount}};
      });
}

Tool type_tool(const ToolMaker& maker, const DesktopSize& s) {
  return maker.make("type", ToolEffect::write,
                    "Type text on the keyboard into whatever has the focus: any UTF-8 text, a newline is Return. At "
                    "most " +
                        std::to_string(kMaxDesktopTextBytes) + " bytes.",
                    object_schema({{"text", string_property("the text to type")}}, {"text"}),
                    [s](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
                      const Input input(in, {"text"});
                      const std::string text = input.string("text");
                      check_first(detail::text_action(DesktopAction::Kind::type, text), s);
                      on_screen(sandbox, s).type(text);
                      return json{{"typed", text.size()}};
                    });
}

Tool key_tool(const ToolMaker& maker, const DesktopSize& s) {
  return maker.make(
      "key", ToolEffect::write,
      "Press keys, in xdotool's names: a combination such as ctrl+s, Return, alt+Tab or shift+F10; several, one "
      "after the other, separated by spaces (ctrl+a Delete).",
      object_schema({{"keys", string_property("the key combinations")}}, {"keys"}),
      [s](const ToolMaker::SandboxOf& sandbox, const json& in, const RunContext&) {
        const Input input(in, {"keys"});
        const std::string keys = input.string("keys");
        check_first(detail::text_action(DesktopAction::Kind::key, keys), s);
        on_screen(sandbox, s).key(keys);
        return json{{"keys", keys}};
      });
}

}  // namespace

std::vector<Tool> desktop_tools(const ToolMaker& maker, const SandboxToolsOptions& options) {
  const DesktopSize& s = options.screen;
  std::vector<Tool> tools;
  tools.push_back(screenshot_tool(maker, s));
  tools.push_back(cursor_tool(maker, s));
  tools.push_back(click_tool(maker, s));
  tools.push_back(move_tool(maker, s));
  tools.push_back(drag_tool(maker, s));
  tools.push_back(scroll_tool(maker, s));
  tools.push_back(type_tool(maker, s));
  tools.push_back(key_tool(maker, s));
  return tools;
}

}  // namespace mayura::tool_maker
