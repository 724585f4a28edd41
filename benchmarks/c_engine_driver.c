/* Whole random games of the Almsev C engine (github.com/Almsev/harmonies-ai, harminies.c), for
 * `python -m benchmarks.bench_engine --c-source PATH`: the engine's source is included from the path given at
 * compile time (-DHARMINIES_SOURCE='"PATH"'); nothing of it is in this repository.
 *
 * Reads lines "players board seed games" on stdin (board 0: Side A, 1: Side B, as the C engine numbers them) and
 * answers each with one JSON line {"actions", "cpu_s", "games", "score"}: the actions played, the thread CPU
 * seconds the games took, and the sum of every seat's final score. A game picks uniformly among every legal action
 * (get_actions with opt = 0), as harmonies_env.rules.random_games does, from its own xorshift stream. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define main harminies_main
#include HARMINIES_SOURCE
#undef main

static double thread_cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    int players, board, games;
    unsigned long seed;
    uint16_t legal[MAX_ACTIONS];
    while (scanf("%d %d %lu %d", &players, &board, &seed, &games) == 4) {
        long actions = 0, score = 0;
        uint32_t pick = rng_seed((uint32_t)seed ^ 0x5DEECE6u);
        double t0 = thread_cpu();
        for (int g = 0; g < games; ++g) {
            wasm_init_game((uint32_t)seed + (uint32_t)g * 2654435761u, players, board, 0);
            int end = 0;
            while (!end) {
                int n = get_actions(&global_state, legal, 0);
                if (n <= 0) break;
                end = do_action(&global_state, legal[rng_range(&pick, (uint32_t)n)]);
                actions++;
            }
            for (int p = 0; p < players; ++p) score += player_score(&global_state, p, 0);
        }
        double cpu = thread_cpu() - t0;
        printf("{\"actions\": %ld, \"cpu_s\": %.6f, \"games\": %d, \"score\": %ld}\n", actions, cpu, games, score);
        fflush(stdout);
    }
    return 0;
}
