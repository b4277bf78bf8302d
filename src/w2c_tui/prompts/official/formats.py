"""The official formats' prompts and tool-call choices, one pair of functions per format.

The strings are protocol facts, reproduced byte for byte with their quirks (a trailing space
after "assistant.", hermes ending at `<|im_end|>` with no assistant turn, functionary writing a
string argument as `""value""`, the default format putting the answer straight after the
question). JSON goes through the standard library with its defaults (`ensure_ascii`, ", "
and ": "), as the official task's does: orjson would write non-ASCII text differently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from w2c_tui.data.when2call import Example

DEFAULT_SYSTEM = (
    "You are a helpful AI assistant. \n"
    "You have access to the following tools described in <tool></tool> which you can use to answer the user's questions.\n"
    "Only use a tool if it directly answers the user's question.\n"
)
TOOL_USE = (
    "To use a tool, return JSON in the following format:\n"
    '{"name": "tool_name", "arguments": {"argument1": "value1", "argument2": "value2", ...}}\n'
)


def _tagged_tools(tools: Sequence[str]) -> str:
    return "\n\n".join(f"<tool>{tool}</tool>" for tool in tools)


# -- default (when2call.yaml): no chat template; the answer follows the question directly


def default_prompt(example: Example) -> str:
    return f"{DEFAULT_SYSTEM}\n{TOOL_USE}\n\n{_tagged_tools(example.tools)}\n\n{example.question}"


# -- llama3_2: Llama 3.2's own tool prompt, the call written as Python: [name(a="v", b=3)]

LLAMA3_2_SYSTEM = (
    "You are an expert in composing functions. You are given a question and a set of possible functions. \n"
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose. \n"
    "If none of the functions can be used, point it out. If the given question lacks the parameters required by "
    "the function,also point it out. You should only return the function call in tools call sections.\n"
    "If you decide to invoke any of the function(s), you MUST put it in the format of "
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]\n"
    "You SHOULD NOT include any other text in the response.\n"
    "Here is a list of functions in JSON format that you can invoke.\n"
)


def _llama3_turns(system: str, question: str) -> str:
    """Llama 3's system and user turns, then the assistant's opener (llama3_2 and functionary)."""
    return (
        f"<|start_header_id|>system<|end_header_id|>\n\n{system}<|eot_id|>"
        f"<|start_header_id|>user<|end_header_id|>\n\n{question}<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def llama3_2_prompt(example: Example) -> str:
    tools = json.dumps([json.loads(tool) for tool in example.tools])
    return _llama3_turns(LLAMA3_2_SYSTEM + tools, example.question)


def llama3_2_call(answer: str) -> str:
    call = json.loads(answer)
    # A string in double quotes, unescaped; any other value as Python prints it (True, [1, 2]).
    args = ", ".join(f'{k}="{v}"' if isinstance(v, str) else f"{k}={v}" for k, v in call["arguments"].items())
    return f"[{call['name']}({args})]"


# -- qwen2_5: Qwen 2.5's tool template; the call as the dataset writes it


def qwen2_5_prompt(example: Example) -> str:
    tools = "\n".join(example.tools).strip()
    return (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\n"
        "You may call one or more functions to assist with the user query.\n\n"
        f"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{tools}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
        f"<|im_start|>user\n{example.question}<|im_end|>\n<|im_start|>assistant\n"
    )


# -- nemotron: NeMo's <extra_id_*> turns around the default system prompt


def nemotron_prompt(example: Example) -> str:
    return (
        f"<extra_id_0>System\n{DEFAULT_SYSTEM}\n\n{_tagged_tools(example.tools)}\n\n"
        f"<extra_id_1>User\n{example.question}\n<extra_id_1>Assistant\n"
    )


def nemotron_call(answer: str) -> str:
    return f"<toolcall> {answer} </toolcall>"


# -- hermes: Hermes 2's function-calling prompt; it ends at the user's <|im_end|>, no assistant turn

HERMES_SCHEMA = (
    '{"properties": {"arguments": {"title": "Arguments", "type": "object"}, "name": {"title": "Name", '
    '"type": "string"}}, "required": ["arguments", "name"], "title": "FunctionCall", "type": "object"}'
)


def hermes_prompt(example: Example) -> str:
    return (
        "<|im_start|>system\nYou are a function calling AI model. You are provided with function signatures within "
        "<tools></tools> XML tags. You may call one or more functions to assist with the user query. Don't make "
        "assumptions about what values to plug into functions. Here are the available tools: "
        f"<tools> {' '.join(example.tools)} </tools> "
        f"Use the following pydantic model json schema for each tool call you will make: {HERMES_SCHEMA} "
        "For each function call return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags as follows:\n"
        '<tool_call>\n{"arguments": <args-dict>, "name": <function-name>}\n</tool_call><|im_end|>'
        f"<|im_start|>user\n{example.question}<|im_end|>"
    )


def hermes_call(answer: str) -> str:
    return f"<tool_call>{answer}\n</tool_call>"


# -- functionary: MeetKai functionary v3 (Llama 3.1); every argument value JSON-encoded inside quotes

FUNCTIONARY_START = (
    "Environment: ipython\n\nCutting Knowledge Date: December 2023\n\n\n"
    "You have access to the following functions:\n"
)
FUNCTIONARY_END = (
    "\nThink very carefully before calling functions.\n"
    "If a you choose to call a function ONLY reply in the following format:\n"
    "<{start_tag}={function_name}>{parameters}{end_tag}\nwhere\n\n"
    "start_tag => `<function`\n"
    "parameters => a JSON dict with the function argument name as key and function argument value as value.\n"
    "end_tag => `</function>`\n\n"
    "Here is an example,\n"
    '<function=example_function_name>{"example_name": "example_value"}</function>\n\n'
    "Reminder:\n"
    "- If looking for real time information use relevant functions before falling back to brave_search\n"
    "- Function calls MUST follow the specified format, start with <function= and end with </function>\n"
    "- Required parameters MUST be specified\n"
    "- Only call one function at a time\n"
    "- Put the entire function call reply on one line\n\n"
)


def functionary_prompt(example: Example) -> str:
    tools = "".join(map(_functionary_tool, example.tools))
    return _llama3_turns(FUNCTIONARY_START + tools + FUNCTIONARY_END, example.question)


def _functionary_tool(tool: str) -> str:
    spec = json.loads(tool)
    return f"Use the function '{spec['name']}' to '{spec['description']}'\n{tool}\n\n"


def functionary_call(answer: str) -> str:
    call = json.loads(answer)
    arguments = call["arguments"] if "arguments" in call else call["parameters"]
    # The quotes around json.dumps are the official format's: "city": ""Paris"", "days": "3".
    args = ", ".join(f'"{k}": "{json.dumps(v)}"' for k, v in arguments.items())
    return f"<function={call['name']}>{{{args}}}</function>"


Prompt = Callable[[Example], str]
Call = Callable[[str], str]

# family -> (its prompt, how it rewrites the tool_call answer; None: as the dataset writes it)
FORMATS: dict[str, tuple[Prompt, Call | None]] = {
    "when2call": (default_prompt, None),
    "when2call-llama3_2": (llama3_2_prompt, llama3_2_call),
    "when2call-qwen2_5": (qwen2_5_prompt, None),
    "when2call-hermes": (hermes_prompt, hermes_call),
    "when2call-functionary": (functionary_prompt, functionary_call),
    "when2call-nemotron": (nemotron_prompt, nemotron_call),
}
