import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { installFetch, installStreams, type FakeStreams } from "../test/fakes";
import { renderAt } from "../test/render";

let streams: FakeStreams;
beforeEach(() => {
  streams = installStreams();
});
afterEach(() => {
  vi.unstubAllGlobals();
});

describe("Recurring Jobs page", () => {
  it("creates a filesystem-trim job with retain 0 and the retain field greyed out", async () => {
    const user = userEvent.setup({ delay: null });
    const calls = installFetch(() => [200, {}]);
    renderAt("/recurringjob");
    act(() => streams.feed("recurringjobs", []));
    await user.click(screen.getByRole("button", { name: "Create Recurring Job" }));
    const dialog = screen.getByRole("dialog", { name: "Create Recurring Job" });
    const task = within(dialog).getByLabelText("Task");
    expect(within(task).getAllByRole("option").map((o) => o.textContent)).toContain("filesystem-trim");
    expect(within(task).getAllByRole("option").map((o) => o.textContent)).not.toContain("system-backup");
    await user.type(within(dialog).getByLabelText("Name"), "trim");
    await user.clear(within(dialog).getByLabelText("Retain"));
    await user.type(within(dialog).getByLabelText("Retain"), "3");
    await user.selectOptions(task, "filesystem-trim");
    expect(within(dialog).getByLabelText("Retain")).toBeDisabled();
    expect(within(dialog).getByLabelText("Retain")).toHaveValue(0);
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    await waitFor(() => expect(calls).toHaveLength(1));
    expect(calls[0]).toMatchObject({ method: "POST", url: "recurringjobs", body: { name: "trim", task: "filesystem-trim", retain: 0 } });
  });

  it("keeps the retain a snapshot job is given", async () => {
    const user = userEvent.setup({ delay: null });
    const calls = installFetch(() => [200, {}]);
    renderAt("/recurringjob");
    act(() => streams.feed("recurringjobs", []));
    await user.click(screen.getByRole("button", { name: "Create Recurring Job" }));
    const dialog = screen.getByRole("dialog", { name: "Create Recurring Job" });
    await user.type(within(dialog).getByLabelText("Name"), "snap");
    await user.clear(within(dialog).getByLabelText("Retain"));
    await user.type(within(dialog).getByLabelText("Retain"), "3");
    expect(within(dialog).getByLabelText("Retain")).toBeEnabled();
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    await waitFor(() => expect(calls).toHaveLength(1));
    expect(calls[0]).toMatchObject({ method: "POST", url: "recurringjobs", body: { name: "snap", task: "snapshot", retain: 3 } });
  });
});
