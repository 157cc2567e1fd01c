/* test_chat_template.c — the chat prompt (engine/chat.c): the style recognised from a model's
 * tokenizer.chat_template by its markers, and each style's rendering of a conversation,
 * ending where the assistant's answer starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "engine/chat.h"

static const chat_message conversation[] = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};

static void test_style_of(void **state)
{
    (void)state;
    assert_int_equal(chat_template_from(NULL, CHAT_PLAIN), CHAT_PLAIN);
    assert_int_equal(chat_template_from(NULL, CHAT_CHATML), CHAT_CHATML);
    assert_int_equal(chat_template_from("{% for m in messages %}{{ m.content }}{% endfor %}", CHAT_PLAIN),
                     CHAT_PLAIN);
    assert_int_equal(chat_template_from("{{'<|im_start|>' + message['role'] + '\\n'}}", CHAT_PLAIN), CHAT_CHATML);
    assert_int_equal(chat_template_from("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>' }}",
                                        CHAT_PLAIN),
                     CHAT_LLAMA3);
    assert_string_equal(chat_template_name(CHAT_LLAMA3), "llama3");
}

static void render_is(chat_template style, const char *expected)
{
    char *p = chat_render(style, conversation, sizeof conversation / sizeof *conversation, 1);
    assert_non_null(p);
    assert_string_equal(p, expected);
    free(p);
}

static void test_render(void **state)
{
    (void)state;
    render_is(CHAT_PLAIN, "system: Be brief.\nuser: Hi\nassistant: Hello.\nuser: Bye\nassistant:");
    render_is(CHAT_CHATML, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                           "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
                           "<|im_start|>assistant\n");
    render_is(CHAT_LLAMA3, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                           "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
                           "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_style_of),
        cmocka_unit_test(test_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
