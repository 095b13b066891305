"""Graph-CoT's automatic exploration (sec. 4.2.2 of the paper, algorithm 1): a thought per step, then
entity extraction and linking and levels of LLM-pruned breadth-first search (or a ranked relation chain
walked by the store)."""

from __future__ import annotations

from typing import Any

from kg_agents.core.chains import walk_chain
from kg_agents.core.decide import ground_answers, rank, ranked_answers
from kg_agents.core.metering import invoke_llm
from kg_agents.kg.base import Triple, joins_in_engine
from kg_agents.methods.graph_cot.interaction.base import (
    Interaction,
    entity_label,
    entity_labels,
    toolbox_relation,
    triple_texts,
)
from kg_agents.methods.graph_cot.parsing import (
    match_relations,
    parse_action,
    parse_bracket_list,
    parse_thought,
    parse_yes,
)
from kg_agents.untrusted import kg_block, kg_text

__all__ = ["KEEP_RATIO", "THOUGHT_MAX_TOKENS", "ExploreInteraction"]

#: Ranked pruning keeps the options whose probability is at least this share of the best one's.
KEEP_RATIO = 0.5
#: On the ranked route, most new tokens of a step's thought (its prompt's example thought is about 15).
THOUGHT_MAX_TOKENS = 32


class ExploreInteraction(Interaction):
    """Graph-CoT's automatic exploration (sec. 4.2.2, algorithm 1): a thought per step, then entity
    extraction and linking and ``search_depth`` levels of LLM-pruned breadth-first search.

    Args:
        max_entities: at most this many unvisited entities explored per search level.
        max_relations: at most this many relations kept per entity.
        fanout_limit: at most this many neighbours read per (entity, relation).
        keep_entities: at most this many neighbours kept per (entity, relation).
        relation_chain: on the ranked route with a walk length of 2 hops or more, choose the relations
            as one chain of that length, ranked once from the topic entities (:meth:`_plan`), instead of
            per entity at each level.
        thought_max_tokens: on the ranked route, most new tokens of a step's thought (None: the model's own
            limit). There the thought is the chain's narration (ranking, not the thought, chooses what
            is explored and answered), and a small model left to its own limit writes the same words
            over and over until it: the cap saves most of the tokens graph_explore generates.
        *args, **kwargs: those of :class:`Interaction`.
    """

    name = "graph_explore"
    revisits = True

    def __init__(
        self,
        *args: Any,
        max_entities: int,
        max_relations: int,
        fanout_limit: int,
        keep_entities: int,
        relation_chain: bool = True,
        thought_max_tokens: int | None = THOUGHT_MAX_TOKENS,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, relation_chain=relation_chain, **kwargs)
        self.max_entities = max_entities
        self.max_relations = max_relations
        self.fanout_limit = fanout_limit
        self.keep_entities = keep_entities
        self.thought_max_tokens = thought_max_tokens

    def chain_text(self, branch: dict[str, Any]) -> str:
        lines = [f"Thought {i}: {st.get('thought', '')}" for i, st in enumerate(branch.get("steps") or [], 1)]
        lines.append("Knowledge Triples:\n" + self.triples_text(branch))
        return "\n".join(lines)

    def _thoughts(self, branch: dict[str, Any]) -> str:
        steps = branch.get("steps") or []
        return "\n".join(f"Thought {i}: {st.get('thought', '')}" for i, st in enumerate(steps, 1)) or "(none)"

    def think(self, branch: dict[str, Any], question: str, settings: dict[str, Any]) -> Any:
        msgs = self.prompts["explore_thought"].format_messages(
            graph_definition=self.graph_definition,
            question=question,
            triples=self.triples_text(branch),
            thoughts=self._thoughts(branch),
            attributes="; ".join(branch.get("attributes") or []) or "(none)",
        )
        options = self.sampling(settings)
        if self.thought_max_tokens is not None and settings.get("decide", "rank") == "rank":
            options["max_tokens"] = self.thought_max_tokens
        return invoke_llm(self.model, msgs, **options)

    def ground(
        self, branch: dict[str, Any], output: Any, question: str, settings: dict[str, Any]
    ) -> dict[str, Any]:
        text = str(getattr(output, "content", output) or "").strip()
        parsed = parse_action(text)
        thought = parse_thought(text)
        step: dict[str, Any] = {"thought": thought}
        trace: dict[str, Any] = {}
        ranked = settings.get("decide", "rank") == "rank"
        walk = settings.get("walk_hops")  # None on the papers' route (see nodes.walk_hops)
        if parsed.finish is not None:
            if not ranked or (not walk and ground_answers(parsed.finish, self.candidates(branch))[0]):
                step["action"] = f"Finish[{' | '.join(parsed.finish)}]"
                return {"step": step, "triples": [], "starts": [], "answers": parsed.finish}
            # ranked route: End? (or the walk's length) decides when to stop; a written Finish naming no
            # node the chain reached is dropped (traced) and the step explores as if it had not been written
            trace["thought_finish_dropped"] = parsed.finish
        linked: list[str] = []
        if ranked and branch.get("starts"):
            # ranked route: the search goes on from the nodes the chain has reached (the topic entities on
            # the first step), not from names the model writes in its thought
            trace["extracted"] = "reached entities" if branch.get("steps") else "topic entities"
        else:
            # Entity extraction: from the question on the first step, from the thought afterwards.
            source = thought if branch.get("steps") else f"{question}\n{thought}"
            msg = invoke_llm(self.model, self.prompts["explore_extract"].format_messages(text=source))
            names = parse_bracket_list(str(msg.content))
            for n in names:
                linked.extend(self.box.link(n)[:1])
            trace["extracted"] = names
        trace["linked"] = linked
        visited = list(branch.get("visited") or [])
        seen = list(dict.fromkeys([*(branch.get("seen") or []), *linked]))
        plan, length = branch.get("plan"), int(walk or 0)
        revisit = bool(settings.get("revisit"))  # a 1-hop chain too: it may end on the topic entity
        if (
            ranked
            and self.relation_chain
            and (length >= 2 or (revisit and length))
            and plan is None
            and not branch.get("depth")
        ):
            plan = self._plan(question, seen[: self.max_entities], length, trace, revisit)
        ends = None  # a whole chain's ends, walked by the store: the answer's candidates
        walks: dict[str, list[str]] = {}
        whole = joins_in_engine(self.kg) or revisit
        if plan and len(plan) == length and not branch.get("depth") and whole:
            found, new_seen, search_trace, depth, ends, walks = self._walk_plan(seen, visited, plan, revisit)
        else:
            found, new_seen, search_trace, depth = self._search(
                question, thought, seen, visited, {**branch, "plan": plan}, settings
            )
        trace["search"] = search_trace
        step["observation"] = "; ".join(kg_text(x) for x in triple_texts(self.kg, found)) or "no new triples"
        answers = None
        if ranked and found and search_trace and search_trace[-1].get("end"):
            # End? said the knowledge suffices: the answer is ranked among the entities this step reached
            answers = self._ranked_answer({**branch, "walks": walks}, question, thought, found, trace, ends)
            if answers:
                step["action"] = f"Finish[{' | '.join(map(kg_text, answers))}]"
        return {
            "step": step,
            "triples": found,
            "starts": linked,
            "answers": answers,
            "seen": new_seen,
            "visited": visited,
            "depth": depth,
            "plan": plan,
            "trace": trace,
            **({"walks": walks} if walks else {}),
        }

    def _walk_plan(
        self, seen: list[str], visited: list[str], plan: list[str], revisit: bool = False
    ) -> tuple[list[Triple], list[str], list[dict[str, Any]], int, list[str], dict[str, list[str]]]:
        """The whole relation chain walked by the store (:func:`~kg_agents.core.chains.walk_chain`): its
        ends from the unvisited entities (``fanout_limit`` per entity) with one walk to each, as
        :meth:`_search` returns them (its one level ends the walk), the ends, and with ``revisit`` each
        end's walks (the answer's candidates and support; a walk may end on its start)."""
        todo = [e for e in seen if e not in visited][: self.max_entities]
        visited.extend(todo)
        walk = walk_chain(self.kg, todo, plan, limit=self.fanout_limit, revisit=revisit)
        walks = walk.support() if revisit else {}
        found = list(dict.fromkeys(h.triple for p in walk.paths for h in p.hops))
        reached = [h.target for p in walk.paths for h in p.hops]
        rec = {
            "level": 0,
            "entities": todo,
            "by": "whole chain",
            "ends": walk.ends,
            "truncated": walk.truncated,
        }
        return (
            found,
            list(dict.fromkeys([*seen, *reached])),
            [{**rec, "end": True, "end_by": "hops"}],
            len(plan),
            list(dict.fromkeys(p.end for p in walk.paths if p.end is not None)),
            walks,
        )

    def _ranked_answer(
        self,
        branch: dict[str, Any],
        question: str,
        thought: str,
        found: list[Triple],
        trace: dict[str, Any],
        ends: list[str] | None = None,
    ) -> list[str] | None:
        """The best of the entities ``found`` reached (the ones it started from excluded; ``ends``: only
        these, a whole chain's ends; a branch with ``revisit`` walks: every end, its start too), ranked."""
        origins = (
            set() if branch.get("walks") else set(branch.get("seen") or []) | set(branch.get("starts") or [])
        )
        reached = ends if ends is not None else [x for t in found for x in (t.head, t.tail)]
        labels = list(dict.fromkeys(entity_labels(self.kg, [x for x in reached if x not in origins])))
        if not labels:
            return None
        triples = [*(branch.get("triples") or []), *found][-self.max_context_triples :]
        chain = f"Thought: {thought}\nKnowledge Triples:\n" + "\n".join(
            kg_text(x) for x in triple_texts(self.kg, triples)
        )
        msgs = self.prompts["final_answer"].format_messages(question=question, chain=chain)
        ranking = rank(self.model, msgs, labels, prefix="Answer: ", role="answer", keys=labels)
        trace["answer_ranking"] = ranking.as_trace(top=5)
        return [ranking.best] if ranking.best else None

    def _follow(
        self,
        ent: str,
        chosen: list[str],
        question: str,
        settings: dict[str, Any],
        rec: dict[str, Any],
        found: list[Triple],
        seen: list[str],
        then: str | None = None,
        before: frozenset[str] = frozenset(),
    ) -> None:
        """Follow the ``chosen`` relations of ``ent``, pruning each one's neighbours (entity pruning),
        into ``found`` and ``seen``; truncations and pruning fallbacks go in ``rec``.

        ``before``: the entities the branch reached before this level. A neighbour among them is no
        step forward (the film a writer was reached from, when the question asks for the writer's other
        films; answers never are those entities): it is left out before the pruning, unless every
        neighbour is one (counted in ``rec["turned_back"]``).

        ``then``: the relation chain's next relation. A neighbour without it is off the chain (a film
        with no genre, for a chain that asks its genre next), and so is one whose only neighbours by it
        are ``before`` and ``ent`` (a writer whose only film is the one the walk came from): it is left
        out before the pruning, unless no neighbour goes on (counted in ``rec["off_chain"]``)."""
        for rel in chosen:
            tl = self.kg.neighbors(ent, *toolbox_relation(rel), limit=self.fanout_limit)
            if tl.truncated:
                rec["truncated"].append(f"{ent} {rel}")
            tails = list(tl)
            forward = [t for t in tails if t.other(ent) not in before]
            if forward and len(forward) < len(tails):
                rec.setdefault("turned_back", {})[f"{ent} {rel}"] = len(tails) - len(forward)
                tails = forward
            if then is not None and tails:
                # one read for every neighbour: which of them go on by the next relation to a node the
                # walk has not been at (one more neighbour read than there are such nodes suffices)
                back = before | {ent}
                heads = [t.other(ent) for t in tails]
                limit = min(len(back) + 1, self.fanout_limit)
                nxt = self.kg.neighbors_many(heads, *toolbox_relation(then), limit=limit)
                on_chain = [
                    t
                    for t, h in zip(tails, heads, strict=True)
                    if any(x.other(h) not in back for x in nxt.get(h) or [])
                ]
                if on_chain and len(on_chain) < len(tails):
                    rec.setdefault("off_chain", {})[f"{ent} {rel}"] = len(tails) - len(on_chain)
                    tails = on_chain
            if len(tails) > 1:
                labels = entity_labels(self.kg, [t.other(ent) for t in tails])
                ent_prompt = self.prompts["explore_prune_entities"].format_messages(
                    question=question,
                    head_entity=kg_text(entity_label(self.kg, ent)),
                    relation=kg_text(rel),
                    tail_entities=", ".join(map(kg_text, labels)),
                )
                if settings.get("decide", "rank") == "rank":
                    distinct = list(dict.fromkeys(labels))
                    ranking = rank(
                        self.model,
                        ent_prompt,
                        [f"[{lab}]" for lab in distinct],
                        role="entity",
                        keys=distinct,
                    )
                    best = ranked_answers(ranking, max_answers=self.keep_entities, ratio=KEEP_RATIO)
                    wanted = {b[1:-1].casefold() for b in best}
                else:
                    msg = invoke_llm(self.model, ent_prompt)
                    wanted = {w.casefold() for w in parse_bracket_list(str(msg.content))}
                kept = [t for t, lab in zip(tails, labels, strict=True) if lab.casefold() in wanted]
                if not kept:  # nothing usable selected: keep a bounded prefix, say so
                    kept = tails[: self.keep_entities]
                    rec.setdefault("prune_fallback", []).append(f"{ent} {rel}")
                tails = kept[: self.keep_entities]
            for t in tails:
                found.append(t)
                other = t.other(ent)
                if other not in seen:
                    seen.append(other)

    def _search(
        self,
        question: str,
        thought: str,
        seen: list[str],
        visited: list[str],
        branch: dict[str, Any],
        settings: dict[str, Any],
    ) -> tuple[list[Triple], list[str], list[dict[str, Any]], int]:
        """Algorithm 1: ``search_depth`` BFS levels of relation then entity pruning, End? after each.

        Returns the triples found, the entities seen, a trace record per level, and the chain's depth
        (BFS levels run since its topic entities). With a walk length (``settings["walk_hops"]``, the
        ranked route's ``hops``) End? is not asked: the chain ends once its depth reaches that length.
        """
        found: list[Triple] = []
        trace: list[dict[str, Any]] = []
        depth = int(branch.get("depth") or 0)
        walk = settings.get("walk_hops")  # None on the papers' route
        for level in range(settings["search_depth"]):
            todo = [e for e in seen if e not in visited][: self.max_entities]
            if not todo:
                break
            depth += 1
            rec: dict[str, Any] = {"level": level, "entities": todo, "relations": {}, "truncated": []}
            before = frozenset(seen)  # reached before this level: no step forward (see _follow)
            plan = branch.get("plan") or []
            planned = then = None
            if 0 < depth <= len(plan):  # the ranked chain's relation at this depth, for every entity
                planned = plan[depth - 1]
                then = plan[depth] if depth < len(plan) else None
                rec["by"] = "chain"
            for ent in todo:
                visited.append(ent)
                rels = self.box.neighbor_types(ent)
                if not rels:
                    continue
                if planned is not None:
                    # an entity without the chain's relation is not on the chain: nothing to follow
                    rec["relations"][ent] = chosen = [planned] if planned in rels else []
                    self._follow(ent, chosen, question, settings, rec, found, seen, then, before)
                    continue
                rel_prompt = self.prompts["explore_prune_relations"].format_messages(
                    question=question,
                    entity=kg_text(entity_label(self.kg, ent)),
                    relations=", ".join(map(kg_text, rels)),
                )
                if settings.get("decide", "rank") == "rank":
                    keys = [((ent,), *toolbox_relation(r)) for r in rels]
                    ranking = rank(
                        self.model, rel_prompt, [f"[{r}]" for r in rels], role="relation", keys=keys
                    )
                    top_rels = ranked_answers(ranking, max_answers=self.max_relations, ratio=KEEP_RATIO)
                    chosen = [r[1:-1] for r in top_rels]
                else:
                    msg = invoke_llm(self.model, rel_prompt)
                    chosen = match_relations(parse_bracket_list(str(msg.content)), rels)[: self.max_relations]
                rec["relations"][ent] = chosen
                self._follow(ent, chosen, question, settings, rec, found, seen, before=before)
            trace.append(rec)
            if walk:  # the walk's length decides, not the model
                rec["end"], rec["end_by"] = depth >= walk, "hops"
                if rec["end"]:
                    break
                continue
            triples = [*(branch.get("triples") or []), *found][-self.max_context_triples :]
            end_prompt = self.prompts["explore_end"].format_messages(
                question=question,
                thoughts=thought,
                triples=kg_block(kg_text(x) for x in triple_texts(self.kg, triples)) if triples else "(none)",
                attributes="(none)",
            )
            if settings.get("decide", "rank") == "rank":
                reached = tuple(
                    dict.fromkeys(entity_labels(self.kg, [x for t in found for x in (t.head, t.tail)]))
                )
                rec["end"] = (
                    rank(
                        self.model,
                        end_prompt,
                        ["[Yes]", "[No]"],
                        role="end",
                        keys=[(True, reached), (False, reached)],
                    ).best
                    == "[Yes]"
                )
            else:
                rec["end"] = parse_yes(str(invoke_llm(self.model, end_prompt).content))
            if rec["end"]:
                break
        return list(dict.fromkeys(found)), seen, trace, depth
